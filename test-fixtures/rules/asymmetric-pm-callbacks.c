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

/* A main-phase suspend alone is usually deliberate (stop a vibrator, power a sensor down
 * until its next use): silent. */
static const struct dev_pm_ops vpu2_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
	.suspend = vpu_suspend,
	/* ok: asymmetric-pm-callbacks */
	.resume_noirq = vpu_resume,
};

/* noirq suspend undone in resume_early: a different stage, a deliberate design. */
static const struct dev_pm_ops vpu3_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
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

/* runtime_suspend alone: the device powers itself up on its next access. */
static int vpu_runtime_suspend(struct device *dev)
{
	struct vpu *vpu = dev_get_drvdata(dev);

	clk_disable_unprepare(vpu->clk);
	return 0;
}

static const struct dev_pm_ops vpu5_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
	.runtime_suspend = vpu_runtime_suspend,
};

/* .prepare that only checks, waits, runtime-resumes or returns a direct-complete hint. */
struct dmac {
	void __iomem *base;
	struct completion init_done;
	bool wake_armed;
};

static bool dmac_chan_busy(struct dmac *d)
{
	return readl(d->base + 0x10) & 1;
}

static int dmac_prepare_check(struct device *dev)
{
	struct dmac *d = dev_get_drvdata(dev);

	if (dmac_chan_busy(d))
		return -EAGAIN;
	return 0;
}

static int dmac_prepare_hint(struct device *dev)
{
	return pm_runtime_suspended(dev);
}

static int dmac_resume_child(struct device *dev, void *data)
{
	pm_runtime_resume(dev);
	return 0;
}

static int dmac_prepare_wait(struct device *dev)
{
	struct dmac *d = dev_get_drvdata(dev);

	if (!wait_for_completion_timeout(&d->init_done, HZ))
		return -ETIMEDOUT;
	device_for_each_child_reverse(dev, NULL, dmac_resume_child);
	return 0;
}

static const struct dev_pm_ops dmac1_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
	.prepare = dmac_prepare_check,
};

static const struct dev_pm_ops dmac2_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
	.prepare = dmac_prepare_hint,
};

static const struct dev_pm_ops dmac3_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
	.prepare = dmac_prepare_wait,
};

/* .prepare that arms a wakeup register: with no callback on the way up, it stays armed. */
static int dmac_prepare_arm(struct device *dev)
{
	struct dmac *d = dev_get_drvdata(dev);

	writel(1, d->base + 0x20);
	return 0;
}

static int dmac_prepare_flag(struct device *dev)
{
	struct dmac *d = dev_get_drvdata(dev);

	d->wake_armed = true;
	return 0;
}

static const struct dev_pm_ops dmac4_pm_ops = {
	/* expect: asymmetric-pm-callbacks(quiet) */
	.prepare = dmac_prepare_arm,
};

static const struct dev_pm_ops dmac5_pm_ops = {
	/* expect: asymmetric-pm-callbacks(quiet) */
	.prepare = dmac_prepare_flag,
};

/* The same, but .resume is there to disarm it. */
static const struct dev_pm_ops dmac6_pm_ops = {
	/* ok: asymmetric-pm-callbacks */
	.prepare = dmac_prepare_arm,
	/* ok: asymmetric-pm-callbacks */
	.resume = vpu_resume,
};

static struct platform_driver vpu_driver = {
	.driver = {
		.name = "vpu",
		.pm = &vpu_pm_ops,
	},
};
