// SPDX-License-Identifier: GPL-2.0
/* The i2c controller of rpm_*.txt: runtime PM with autosuspend, and a suspend_late that
 * calls pm_runtime_get_sync() while runtime PM is disabled (rpm_resume -> -EACCES). */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct foo_i2c {
	void __iomem *base;
};

static int foo_i2c_runtime_suspend(struct device *dev)
{
	struct foo_i2c *i2c = dev_get_drvdata(dev);

	writel(0, i2c->base);
	return 0;
}

static int foo_i2c_runtime_resume(struct device *dev)
{
	struct foo_i2c *i2c = dev_get_drvdata(dev);

	writel(1, i2c->base);
	return 0;
}

static int foo_i2c_suspend_late(struct device *dev)
{
	struct foo_i2c *i2c = dev_get_drvdata(dev);

	pm_runtime_get_sync(dev);
	writel(2, i2c->base);
	return 0;
}

static int foo_i2c_resume_early(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops foo_i2c_pm = {
	SET_LATE_SYSTEM_SLEEP_PM_OPS(foo_i2c_suspend_late, foo_i2c_resume_early)
	SET_RUNTIME_PM_OPS(foo_i2c_runtime_suspend, foo_i2c_runtime_resume, NULL)
};

static struct platform_driver foo_i2c_driver = {
	.driver = {
		.name = "foo_i2c",
		.pm = &foo_i2c_pm,
	},
};
module_platform_driver(foo_i2c_driver);
