// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: a driver that uses autosuspend is runtime-suspended whenever
 * it idles. A get in its suspend_late callback returns -EACCES then, and the system suspend
 * aborts, unless .prepare/.suspend resume it (a resume there cannot be undone: the PM core
 * holds a usage reference from before ->prepare). Here .prepare resumes it only for a
 * channel with saved state (the right side of `&&`): skippable, no guarantee (issue 20). */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct dmac_chan {
	struct list_head node;
	u32 saved;
};

struct dmac {
	struct device *dev;
	void __iomem *base;
	struct list_head chans;
};

static bool dmac_chan_busy(struct dmac *d, struct dmac_chan *c)
{
	bool busy;

	if (pm_runtime_resume_and_get(d->dev) < 0)
		return false;
	busy = readl(d->base) & 1;
	pm_runtime_mark_last_busy(d->dev);
	pm_runtime_put_autosuspend(d->dev);
	return busy;
}

/* resumes the device only for a channel that saved state: maybe never */
static int dmac_prepare(struct device *dev)
{
	struct dmac *d = dev_get_drvdata(dev);
	struct dmac_chan *c;

	list_for_each_entry(c, &d->chans, node) {
		if (c->saved && dmac_chan_busy(d, c))
			return -EAGAIN;
	}
	return 0;
}

static int dmac_suspend_late(struct device *dev)
{
	struct dmac *d = dev_get_drvdata(dev);
	int ret;

	/* expect: runtime-pm-while-disabled(warning) */
	ret = pm_runtime_resume_and_get(d->dev);
	if (ret < 0)
		return ret;
	writel(0, d->base + 4);
	pm_runtime_put_noidle(d->dev);
	return 0;
}

static int dmac_resume_early(struct device *dev)
{
	struct dmac *d = dev_get_drvdata(dev);
	int ret;

	/* suspend_late got the same device on every path: it is active here */
	/* ok: runtime-pm-while-disabled */
	ret = pm_runtime_resume_and_get(d->dev);
	if (ret < 0)
		return ret;
	writel(1, d->base + 4);
	pm_runtime_mark_last_busy(d->dev);
	pm_runtime_put_autosuspend(d->dev);
	return 0;
}

static int dmac_runtime_suspend(struct device *dev)
{
	return 0;
}

static int dmac_runtime_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops dmac_pm_ops = {
	.prepare = dmac_prepare,
	LATE_SYSTEM_SLEEP_PM_OPS(dmac_suspend_late, dmac_resume_early)
	RUNTIME_PM_OPS(dmac_runtime_suspend, dmac_runtime_resume, NULL)
};

static int dmac_probe(struct platform_device *pdev)
{
	pm_runtime_set_autosuspend_delay(&pdev->dev, 500);
	pm_runtime_use_autosuspend(&pdev->dev);
	/* expect: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);
	return 0;
}

static struct platform_driver dmac_driver = {
	.probe = dmac_probe,
	.driver = {
		.name = "dmac",
		.pm = pm_ptr(&dmac_pm_ops),
	},
};
module_platform_driver(dmac_driver);
