// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: reported where the device may be runtime-suspended or the
 * driver relies on the call to change its power; silent where it only keeps a count. */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct strap {
	struct device *dev;
	void __iomem *base;
};

/* A power cycle that relies on the put: with runtime PM disabled it never happens, but
 * nothing fails either: info. */
static int strap_ctrl_init(struct strap *s)
{
	/* expect: runtime-pm-while-disabled(info) */
	pm_runtime_put_sync(s->dev);
	/* ok: runtime-pm-while-disabled */
	pm_runtime_get_sync(s->dev);
	writel(1, s->base);
	return 0;
}

static int strap_resume_noirq(struct device *dev)
{
	return strap_ctrl_init(dev_get_drvdata(dev));
}

static const struct dev_pm_ops strap_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(NULL, strap_resume_noirq)
};

/* .prepare runtime-resumes the device: it stays active through suspend_late. */
static int dma_prepare(struct device *dev)
{
	return pm_runtime_resume_and_get(dev);
}

static int dma_suspend_late(struct device *dev)
{
	int ret;

	/* ok: runtime-pm-while-disabled */
	ret = pm_runtime_resume_and_get(dev);
	if (ret < 0)
		return ret;
	pm_runtime_put_noidle(dev);
	return 0;
}

static void dma_complete(struct device *dev)
{
	pm_runtime_put(dev);
}

static const struct dev_pm_ops dma_pm_ops = {
	.prepare = dma_prepare,
	.complete = dma_complete,
	LATE_SYSTEM_SLEEP_PM_OPS(dma_suspend_late, NULL)
};

/* A helper shared with probe that re-enables runtime PM before using it: the enable only
 * takes back suspend_noirq's own pm_runtime_disable(), the PM core's disable of suspend_late
 * still holds, and the get powers nothing up (info: nothing fails; issue 31). */
static int host_power_up(struct device *dev)
{
	pm_runtime_enable(dev);
	/* expect: runtime-pm-while-disabled(info) */
	return pm_runtime_get_sync(dev);
}

static int host_resume_noirq(struct device *dev)
{
	return host_power_up(dev);
}

static int host_suspend_noirq(struct device *dev)
{
	pm_runtime_disable(dev);
	return 0;
}

static const struct dev_pm_ops host_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(host_suspend_noirq, host_resume_noirq)
};

/* Nothing keeps the device active: a get in suspend_late fails when it autosuspended. */
static int idle_suspend_late(struct device *dev)
{
	int ret;

	/* expect: runtime-pm-while-disabled */
	ret = pm_runtime_resume_and_get(dev);
	if (ret < 0)
		return ret;
	pm_runtime_put_noidle(dev);
	return 0;
}

static int idle_resume_early(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops idle_pm_ops = {
	LATE_SYSTEM_SLEEP_PM_OPS(idle_suspend_late, idle_resume_early)
};

static struct platform_driver strap_driver = {
	.driver = { .name = "strap", .pm = pm_sleep_ptr(&strap_pm_ops) },
};
