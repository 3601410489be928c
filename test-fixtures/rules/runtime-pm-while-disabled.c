// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: runtime PM calls between suspend_late and resume_early. */
#include <linux/i2c.h>
#include <linux/pm_runtime.h>

struct baz {
	struct device *dev;
	void __iomem *base;
};

static int baz_power_up(struct baz *baz)
{
	int ret;

	/* only reached when the device is not runtime-suspended (see baz_resume_early): succeeds */
	/* ok: runtime-pm-while-disabled */
	ret = pm_runtime_resume_and_get(baz->dev);
	if (ret)
		return ret;
	writel(1, baz->base);
	/* balances the get above */
	/* ok: runtime-pm-while-disabled */
	pm_runtime_put(baz->dev);
	return 0;
}

static int baz_suspend_late(struct device *dev)
{
	/* only a count: pm_runtime_force_suspend() does the work */
	/* ok: runtime-pm-while-disabled */
	pm_runtime_put_sync_suspend(dev);
	/* ok: runtime-pm-while-disabled */
	return pm_runtime_force_suspend(dev);
}

static int baz_resume_early(struct device *dev)
{
	struct baz *baz = dev_get_drvdata(dev);

	/* ok: runtime-pm-while-disabled */
	if (pm_runtime_status_suspended(dev))
		return pm_runtime_force_resume(dev);
	return baz_power_up(baz);
}

static int baz_runtime_suspend(struct device *dev)
{
	return 0;
}

static int baz_runtime_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops baz_pm_ops = {
	LATE_SYSTEM_SLEEP_PM_OPS(baz_suspend_late, baz_resume_early)
	RUNTIME_PM_OPS(baz_runtime_suspend, baz_runtime_resume, NULL)
};

static struct i2c_driver baz_driver = {
	.driver = {
		.name = "baz",
		.pm = pm_ptr(&baz_pm_ops),
	},
};
module_i2c_driver(baz_driver);
