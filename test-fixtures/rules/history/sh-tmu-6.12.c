// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/clocksource/sh_tmu.c: its
 * Kconfig symbol is a bool, it registers at subsys_initcall and sets suppress_bind_attrs;
 * the module_exit() it also names never runs in a built-in kernel. Never unbound, retried
 * only after a deferral: the error returns' leak is a quiet hint (blind round 3).
 */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int sh_tmu_probe(struct platform_device *pdev)
{
	struct sh_tmu_device *tmu = platform_get_drvdata(pdev);
	int ret;

	if (!is_sh_early_platform_device(pdev)) {
		pm_runtime_set_active(&pdev->dev);
		/* expect: runtime-pm-enable-not-undone(quiet) */
		pm_runtime_enable(&pdev->dev);
	}

	if (tmu) {
		dev_info(&pdev->dev, "kept as earlytimer\n");
		goto out;
	}

	tmu = kzalloc(sizeof(*tmu), GFP_KERNEL);
	if (tmu == NULL)
		return -ENOMEM;

	ret = sh_tmu_setup(tmu, pdev);
	if (ret) {
		kfree(tmu);
		pm_runtime_idle(&pdev->dev);
		return ret;
	}

	if (is_sh_early_platform_device(pdev))
		return 0;

 out:
	if (tmu->has_clockevent || tmu->has_clocksource)
		pm_runtime_irq_safe(&pdev->dev);
	else
		pm_runtime_idle(&pdev->dev);

	return 0;
}

static struct platform_driver sh_tmu_device_driver = {
	.probe		= sh_tmu_probe,
	.driver		= {
		.name	= "sh_tmu",
		.suppress_bind_attrs = true,
	},
};

static int __init sh_tmu_init(void)
{
	return platform_driver_register(&sh_tmu_device_driver);
}

static void __exit sh_tmu_exit(void)
{
	platform_driver_unregister(&sh_tmu_device_driver);
}

subsys_initcall(sh_tmu_init);
module_exit(sh_tmu_exit);
