// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/i2c/busses/i2c-qcom-cci.c:
 * runtime PM comes from devm_pm_runtime_set_active_enabled(), which ends in
 * devm_pm_runtime_enable(): its action turns autosuspend off before disabling
 * (drivers/base/power/runtime.c:1610-1614), on the error_i2c exit and at unbind alike
 * (blind round 3: "wrong").
 */
#include <linux/i2c.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int cci_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct cci *cci;
	int ret, i;

	cci = devm_kzalloc(dev, sizeof(*cci), GFP_KERNEL);
	if (!cci)
		return -ENOMEM;

	ret = cci_reset(cci);
	if (ret < 0)
		goto error;

	ret = cci_init(cci);
	if (ret < 0)
		goto error;

	ret = devm_pm_runtime_set_active_enabled(dev);
	if (ret)
		goto error;

	pm_runtime_set_autosuspend_delay(dev, MSEC_PER_SEC);
	/* ok: runtime-pm-autosuspend-not-undone */
	pm_runtime_use_autosuspend(dev);

	for (i = 0; i < cci->data->num_masters; i++) {
		ret = i2c_add_adapter(&cci->master[i].adap);
		if (ret < 0)
			goto error_i2c;
	}

	return 0;

error_i2c:
	for (--i ; i >= 0; i--)
		i2c_del_adapter(&cci->master[i].adap);
error:
	disable_irq(cci->irq);
	return ret;
}

static void cci_remove(struct platform_device *pdev)
{
	struct cci *cci = platform_get_drvdata(pdev);
	int i;

	for (i = 0; i < cci->data->num_masters; i++)
		i2c_del_adapter(&cci->master[i].adap);
	disable_irq(cci->irq);
}

static struct platform_driver qcom_cci_driver = {
	.probe  = cci_probe,
	.remove_new = cci_remove,
	.driver = {
		.name = "i2c-qcom-cci",
	},
};
module_platform_driver(qcom_cci_driver);
