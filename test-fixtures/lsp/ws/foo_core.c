// SPDX-License-Identifier: GPL-2.0
/*
 * dpmlens LSP fixture: a small platform driver whose noirq callback arms wakeup through a
 * helper defined in another file of the same directory (foo_wake.c).
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm.h>
#include <linux/pm_runtime.h>
#include "foo.h"

static void foo_hw_off(struct foo *foo)
{
	writel(0, foo->base);
}

static int foo_suspend(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	foo_hw_off(foo);
	msleep(5);
	return 0;
}

static int foo_resume(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	writel(1, foo->base);
	return 0;
}

static int foo_suspend_noirq(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	foo_arm_wake(foo);
	return 0;
}

static const struct dev_pm_ops foo_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(foo_suspend, foo_resume)
	.suspend_noirq = foo_suspend_noirq,
};

static int foo_probe(struct platform_device *pdev)
{
	struct foo *foo;

	foo = devm_kzalloc(&pdev->dev, sizeof(*foo), GFP_KERNEL);
	if (!foo)
		return -ENOMEM;
	foo->dev = &pdev->dev;
	platform_set_drvdata(pdev, foo);
	return 0;
}

static struct platform_driver foo_driver = {
	.probe = foo_probe,
	.driver = {
		.name = "foo-sensor",
		.pm = pm_sleep_ptr(&foo_pm_ops),
	},
};
module_platform_driver(foo_driver);
MODULE_LICENSE("GPL");

/* An auxiliary table: its .prepare arms a register that no callback on the way up disarms
 * (asymmetric-pm-callbacks, info). */
static int foo_aux_prepare(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	writel(2, foo->base);
	return 0;
}

static const struct dev_pm_ops foo_aux_pm_ops = {
	.prepare = foo_aux_prepare,
};
