// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/clocksource/sh_mtu2.c: probe's
 * error returns leave runtime PM enabled (a deferred re-probe meets 'Unbalanced
 * pm_runtime_enable!'), but remove refuses on purpose (`return -EBUSY`, the clockevent stays
 * registered and keeps taking runtime PM references): no unbind leak and no devm_ fix, whose
 * action would run at unbind (blind round 1 found the old message half wrong).
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int sh_mtu2_probe(struct platform_device *pdev)
{
	struct sh_mtu2_device *mtu = platform_get_drvdata(pdev);
	int ret;

	if (!is_sh_early_platform_device(pdev)) {
		pm_runtime_set_active(&pdev->dev);
		/* expect: runtime-pm-enable-not-undone(warning) */
		pm_runtime_enable(&pdev->dev);
	}

	if (mtu) {
		dev_info(&pdev->dev, "kept as earlytimer\n");
		goto out;
	}

	mtu = kzalloc(sizeof(*mtu), GFP_KERNEL);
	if (mtu == NULL)
		return -ENOMEM;

	ret = sh_mtu2_setup(mtu, pdev);
	if (ret) {
		kfree(mtu);
		pm_runtime_idle(&pdev->dev);
		return ret;
	}
	if (is_sh_early_platform_device(pdev))
		return 0;

 out:
	if (mtu->has_clockevent)
		pm_runtime_irq_safe(&pdev->dev);
	else
		pm_runtime_idle(&pdev->dev);

	return 0;
}

static int sh_mtu2_remove(struct platform_device *pdev)
{
	return -EBUSY; /* cannot unregister clockevent */
}

static struct platform_driver sh_mtu2_device_driver = {
	.probe		= sh_mtu2_probe,
	.remove		= sh_mtu2_remove,
	.driver		= {
		.name	= "sh_mtu2",
	},
};

static int __init sh_mtu2_init(void)
{
	return platform_driver_register(&sh_mtu2_device_driver);
}

static void __exit sh_mtu2_exit(void)
{
	platform_driver_unregister(&sh_mtu2_device_driver);
}

module_init(sh_mtu2_init);
module_exit(sh_mtu2_exit);
