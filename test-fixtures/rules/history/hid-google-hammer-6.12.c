// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/hid/hid-google-hammer.c:
 * __cbas_ec_probe() registers the wakeup source as its last step before `return 0;`, and
 * cbas_ec_probe() returns its result: a failing return there means the helper failed before
 * that step, so only the unbind leaks (cbas_ec_remove() never turns wakeup off; blind round 3).
 */
#include <linux/mutex.h>
#include <linux/platform_device.h>

static DEFINE_MUTEX(cbas_ec_reglock);

static int __cbas_ec_probe(struct platform_device *pdev)
{
	struct cros_ec_device *ec = dev_get_drvdata(pdev->dev.parent);
	int error;

	error = cbas_ec_query_base(ec, false, &state);
	if (error)
		return error;

	cbas_ec.dev = &pdev->dev;
	error = blocking_notifier_chain_register(&ec->event_notifier, &cbas_ec.notifier);
	if (error) {
		dev_err(&pdev->dev, "cannot register notifier: %d\n", error);
		cbas_ec_set_input(NULL);
		return error;
	}

	/* expect: wakeup-source-not-undone(warning) */
	device_init_wakeup(&pdev->dev, true);
	return 0;
}

static int cbas_ec_probe(struct platform_device *pdev)
{
	int retval;

	mutex_lock(&cbas_ec_reglock);

	if (cbas_ec.input) {
		retval = -EBUSY;
		goto out;
	}

	retval = __cbas_ec_probe(pdev);

out:
	mutex_unlock(&cbas_ec_reglock);
	return retval;
}

static void cbas_ec_remove(struct platform_device *pdev)
{
	struct cros_ec_device *ec = dev_get_drvdata(pdev->dev.parent);

	mutex_lock(&cbas_ec_reglock);
	blocking_notifier_chain_unregister(&ec->event_notifier, &cbas_ec.notifier);
	cbas_ec_set_input(NULL);
	mutex_unlock(&cbas_ec_reglock);
}

static struct platform_driver cbas_ec_driver = {
	.probe = cbas_ec_probe,
	.remove_new = cbas_ec_remove,
	.driver = {
		.name = "cbas_ec",
	},
};
module_platform_driver(cbas_ec_driver);
