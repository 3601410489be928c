// SPDX-License-Identifier: GPL-2.0
/*
 * ACME ambient light sensor (demo driver for dpmlens; not a real device).
 */
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm.h>
#include <linux/pm_runtime.h>
#include <linux/pm_wakeup.h>

#define ACME_CTRL		0x00
#define ACME_CTRL_ENABLE	BIT(0)
#define ACME_POWERUP_MS		5
#define ACME_SETTLE_MS		(ACME_POWERUP_MS + 45)

struct acme_als {
	struct device *dev;
	void __iomem *base;
	int irq;
	bool wake_armed;
};

static int acme_als_hw_enable(struct acme_als *als)
{
	writel(ACME_CTRL_ENABLE, als->base + ACME_CTRL);
	/* datasheet says 5 ms, plus some extra just in case */
	msleep(ACME_SETTLE_MS);
	return 0;
}

static void acme_als_arm_wake(struct acme_als *als)
{
	if (device_may_wakeup(als->dev))
		enable_irq_wake(als->irq);
}

static int acme_als_read(struct acme_als *als, u32 *val)
{
	int ret;

	ret = pm_runtime_get_sync(als->dev);
	if (ret < 0)
		return ret;

	*val = readl(als->base + 0x10);
	pm_runtime_put(als->dev);
	return 0;
}

static int __maybe_unused acme_als_suspend_late(struct device *dev)
{
	struct acme_als *als = dev_get_drvdata(dev);

	pm_runtime_put_sync(dev);
	writel(0, als->base + ACME_CTRL);
	return 0;
}

static int __maybe_unused acme_als_resume_early(struct device *dev)
{
	struct acme_als *als = dev_get_drvdata(dev);

	pm_runtime_get_sync(dev);
	return acme_als_hw_enable(als);
}

static int __maybe_unused acme_als_suspend_noirq(struct device *dev)
{
	struct acme_als *als = dev_get_drvdata(dev);

	acme_als_arm_wake(als);
	return 0;
}

static int __maybe_unused acme_als_runtime_resume(struct device *dev)
{
	struct acme_als *als = dev_get_drvdata(dev);

	writel(ACME_CTRL_ENABLE, als->base + ACME_CTRL);
	msleep(2);
	mdelay(20);
	return 0;
}

static int __maybe_unused acme_als_runtime_suspend(struct device *dev)
{
	struct acme_als *als = dev_get_drvdata(dev);

	if (pm_runtime_suspended(dev))
		return 0;
	writel(0, als->base + ACME_CTRL);
	return 0;
}

static const struct dev_pm_ops acme_als_pm_ops = {
	SET_LATE_SYSTEM_SLEEP_PM_OPS(acme_als_suspend_late, acme_als_resume_early)
	.suspend_noirq = acme_als_suspend_noirq,
	SET_RUNTIME_PM_OPS(acme_als_runtime_suspend, acme_als_runtime_resume, NULL)
};

static irqreturn_t acme_als_irq(int irq, void *data)
{
	struct acme_als *als = data;
	u32 val;

	if (acme_als_read(als, &val))
		return IRQ_NONE;
	return IRQ_HANDLED;
}

static int acme_als_probe(struct platform_device *pdev)
{
	struct acme_als *als;

	als = devm_kzalloc(&pdev->dev, sizeof(*als), GFP_KERNEL);
	if (!als)
		return -ENOMEM;
	als->dev = &pdev->dev;
	als->base = devm_platform_ioremap_resource(pdev, 0);
	if (IS_ERR(als->base))
		return PTR_ERR(als->base);
	als->irq = platform_get_irq(pdev, 0);
	if (als->irq < 0)
		return als->irq;
	platform_set_drvdata(pdev, als);
	device_init_wakeup(&pdev->dev, true);
	pm_runtime_enable(&pdev->dev);
	return devm_request_threaded_irq(&pdev->dev, als->irq, NULL, acme_als_irq,
					 IRQF_ONESHOT, "acme-als", als);
}

static struct platform_driver acme_als_driver = {
	.probe = acme_als_probe,
	.driver = {
		.name = "acme-als",
		.pm = &acme_als_pm_ops,
	},
};
module_platform_driver(acme_als_driver);

MODULE_DESCRIPTION("ACME ambient light sensor (dpmlens demo)");
MODULE_LICENSE("GPL");
