// SPDX-License-Identifier: GPL-2.0
/* asymmetric-pm-callbacks: one side of a suspend/resume pair only. */
#include <linux/clk.h>
#include <linux/platform_device.h>

struct vpu {
	struct clk *clk;
};

static int vpu_suspend_late(struct device *dev)
{
	return 0;
}

static int vpu_suspend_noirq(struct device *dev)
{
	struct vpu *vpu = dev_get_drvdata(dev);

	clk_disable_unprepare(vpu->clk);
	return 0;
}

static int vpu_resume_early(struct device *dev)
{
	return 0;
}

static int vpu_suspend(struct device *dev)
{
	return 0;
}

static int vpu_resume(struct device *dev)
{
	return 0;
}

/* The clock is turned off in noirq and nothing on the way up turns it back on. */
static const struct dev_pm_ops vpu_pm_ops = {
	/* expect: asymmetric-pm-callbacks(warning) */
	.suspend_noirq = vpu_suspend_noirq,
};

static const struct dev_pm_ops vpu2_pm_ops = {
	/* expect: asymmetric-pm-callbacks(info) */
	.suspend = vpu_suspend,
	/* ok: asymmetric-pm-callbacks */
	.resume_noirq = vpu_resume,
};

/* noirq suspend undone in resume_early: a different stage, reported as info only. */
static const struct dev_pm_ops vpu3_pm_ops = {
	/* expect: asymmetric-pm-callbacks(info) */
	.suspend_noirq = vpu_suspend_noirq,
	/* ok: asymmetric-pm-callbacks */
	.suspend_late = vpu_suspend_late,
	/* ok: asymmetric-pm-callbacks */
	.resume_early = vpu_resume_early,
};

static const struct dev_pm_ops vpu4_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
	.resume = vpu_resume,
	/* ok: asymmetric-pm-callbacks */
	SET_LATE_SYSTEM_SLEEP_PM_OPS(vpu_suspend_late, vpu_resume_early)
};

static struct platform_driver vpu_driver = {
	.driver = {
		.name = "vpu",
		.pm = &vpu_pm_ops,
	},
};
