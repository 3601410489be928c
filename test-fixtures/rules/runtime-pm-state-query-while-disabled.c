// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-state-query-while-disabled: pm_runtime_suspended() lies in late/noirq/early. */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct cam {
	struct clk *clk;
};

static int cam_hw_off(struct device *dev)
{
	struct cam *cam = dev_get_drvdata(dev);

	/* expect: runtime-pm-state-query-while-disabled */
	if (pm_runtime_suspended(dev))
		return 0;
	clk_disable_unprepare(cam->clk);
	return 0;
}

static int cam_suspend_noirq(struct device *dev)
{
	return cam_hw_off(dev);
}

static int cam_resume_early(struct device *dev)
{
	struct cam *cam = dev_get_drvdata(dev);

	/* expect: runtime-pm-state-query-while-disabled */
	if (!pm_runtime_active(dev))
		return 0;
	return clk_prepare_enable(cam->clk);
}

static int cam_suspend_late(struct device *dev)
{
	/* ok: runtime-pm-state-query-while-disabled */
	if (pm_runtime_status_suspended(dev))
		return 0;
	return 0;
}

static int cam_resume_noirq(struct device *dev)
{
	return 0;
}

static int cam_suspend(struct device *dev)
{
	/* ok: runtime-pm-state-query-while-disabled */
	if (pm_runtime_suspended(dev))
		return 0;
	return cam_hw_off(dev);
}

static int cam_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops cam_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(cam_suspend, cam_resume)
	LATE_SYSTEM_SLEEP_PM_OPS(cam_suspend_late, cam_resume_early)
	NOIRQ_SYSTEM_SLEEP_PM_OPS(cam_suspend_noirq, cam_resume_noirq)
};

static struct platform_driver cam_driver = {
	.driver = {
		.name = "cam",
		.pm = pm_sleep_ptr(&cam_pm_ops),
	},
};
module_platform_driver(cam_driver);
