// SPDX-License-Identifier: GPL-2.0
/* The device was pinned active in .suspend: a get in the noirq phase succeeds. */
#include <linux/i2c.h>
#include <linux/pm_runtime.h>

static int qux_suspend(struct device *dev)
{
	/* ok: runtime-pm-while-disabled */
	pm_runtime_get_sync(dev);
	return 0;
}

static int qux_suspend_noirq(struct device *dev)
{
	int ret;

	/* ok: runtime-pm-while-disabled */
	ret = pm_runtime_resume_and_get(dev);
	if (ret < 0)
		return ret;
	/* ok: runtime-pm-while-disabled */
	pm_runtime_put_noidle(dev);
	return 0;
}

static int qux_resume_noirq(struct device *dev)
{
	return 0;
}

static int qux_resume(struct device *dev)
{
	/* ok: runtime-pm-while-disabled */
	pm_runtime_put(dev);
	return 0;
}

static const struct dev_pm_ops qux_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(qux_suspend, qux_resume)
	NOIRQ_SYSTEM_SLEEP_PM_OPS(qux_suspend_noirq, qux_resume_noirq)
};

static struct i2c_driver qux_driver = {
	.driver = {
		.name = "qux",
		.pm = pm_sleep_ptr(&qux_pm_ops),
	},
};
module_i2c_driver(qux_driver);

/* The reference taken in suspend_noirq is dropped in resume_noirq: only a balance. */
static int mmc_suspend_noirq(struct device *dev)
{
	/* ok: runtime-pm-while-disabled */
	pm_runtime_get_noresume(dev);
	return pm_runtime_force_suspend(dev);
}

static int mmc_resume_noirq(struct device *dev)
{
	int ret = pm_runtime_force_resume(dev);

	/* ok: runtime-pm-while-disabled */
	pm_runtime_put(dev);
	return ret;
}

static const struct dev_pm_ops mmc_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(mmc_suspend_noirq, mmc_resume_noirq)
};
