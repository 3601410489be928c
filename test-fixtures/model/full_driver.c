// SPDX-License-Identifier: GPL-2.0
/* A small but complete platform driver exercising the model: every line number is tested. */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

#define FOO_SETTLE_MS	(10 + 40)

struct foo_priv {
	int irq;
	bool wake;
};

static void foo_arm_wake(struct foo_priv *p)
{
	enable_irq_wake(p->irq);
}

static int __maybe_unused foo_suspend_noirq(struct device *dev)
{
	struct foo_priv *p = dev_get_drvdata(dev);

	if (device_may_wakeup(dev))
		foo_arm_wake(p);
	return 0;
}

static int __maybe_unused foo_resume_noirq(struct device *dev)
{
	msleep(FOO_SETTLE_MS);
	return 0;
}

static int foo_runtime_suspend(struct device *dev)
{
	return 0;
}

static int foo_runtime_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops foo_pm_ops = {
	SET_NOIRQ_SYSTEM_SLEEP_PM_OPS(foo_suspend_noirq, foo_resume_noirq)
	SET_RUNTIME_PM_OPS(foo_runtime_suspend, foo_runtime_resume, NULL)
};

static int foo_probe(struct platform_device *pdev)
{
	pm_runtime_enable(&pdev->dev);
	return 0;
}

static struct platform_driver foo_driver = {
	.probe = foo_probe,
	.driver = {
		.name = KBUILD_MODNAME,
		.pm = &foo_pm_ops,
	},
};
module_platform_driver(foo_driver);
