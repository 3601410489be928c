// SPDX-License-Identifier: GPL-2.0
/*
 * dpmlens end-to-end fixture (e2e/run.mjs): a touch controller whose noirq callback arms its
 * wake IRQ through a helper, after suspend_device_irqs() has already run, and whose resume
 * waits with a too-short msleep(); a status read leaks a runtime-PM reference when the resume
 * fails. e2e/make-trace.mjs writes a 100-cycle ftrace capture of it.
 */
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm.h>
#include <linux/pm_runtime.h>

struct zeta {
	void __iomem *base;
	int irq;
};

static void zeta_arm_wake(struct zeta *zt)
{
	enable_irq_wake(zt->irq);
}

static int zeta_suspend(struct device *dev)
{
	struct zeta *zt = dev_get_drvdata(dev);

	writel(0, zt->base);
	return 0;
}

static int zeta_suspend_noirq(struct device *dev)
{
	struct zeta *zt = dev_get_drvdata(dev);

	if (device_may_wakeup(dev))
		zeta_arm_wake(zt);
	return 0;
}

static int zeta_resume(struct device *dev)
{
	struct zeta *zt = dev_get_drvdata(dev);

	writel(1, zt->base);
	msleep(5);
	return 0;
}

static const struct dev_pm_ops zeta_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(zeta_suspend, zeta_resume)
	.suspend_noirq = zeta_suspend_noirq,
};

static int zeta_probe(struct platform_device *pdev)
{
	struct zeta *zt;

	zt = devm_kzalloc(&pdev->dev, sizeof(*zt), GFP_KERNEL);
	if (!zt)
		return -ENOMEM;
	zt->irq = platform_get_irq(pdev, 0);
	if (zt->irq < 0)
		return zt->irq;
	platform_set_drvdata(pdev, zt);
	device_init_wakeup(&pdev->dev, true);
	return 0;
}

static int zeta_read_status(struct device *dev)
{
	struct zeta *zt = dev_get_drvdata(dev);
	int ret;

	ret = pm_runtime_get_sync(dev);
	if (ret < 0)
		return ret;
	ret = readl(zt->base);
	pm_runtime_put(dev);
	return ret;
}

static struct platform_driver zeta_driver = {
	.probe = zeta_probe,
	.driver = {
		.name = "zeta-touch",
		.pm = pm_sleep_ptr(&zeta_pm_ops),
	},
};
module_platform_driver(zeta_driver);
MODULE_LICENSE("GPL");
