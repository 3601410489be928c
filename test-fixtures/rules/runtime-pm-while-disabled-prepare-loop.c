// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: an autosuspending controller whose .prepare asks every port
 * whether it is still busy, and the helper runtime-resumes the device to read it, then
 * puts it with autosuspend. device_prepare() took a usage reference before ->prepare, so
 * that put cannot suspend the device: it stays RPM_ACTIVE until resume_early, and the
 * resume in suspend_late returns 1 (issue 20: judged "cannot occur"). */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct ctl_port {
	struct list_head link;
	u32 mask;
};

struct ctl {
	struct device *dev;
	void __iomem *regs;
	struct list_head ports;
};

static bool ctl_port_running(struct ctl *ctl, struct ctl_port *p)
{
	bool running;

	if (pm_runtime_resume_and_get(ctl->dev))
		return false;
	running = readl(ctl->regs + 8) & p->mask;
	pm_runtime_put_autosuspend(ctl->dev);
	return running;
}

static int ctl_prepare(struct device *dev)
{
	struct ctl *ctl = dev_get_drvdata(dev);
	struct ctl_port *p, *n;

	list_for_each_entry_safe(p, n, &ctl->ports, link)
		if (ctl_port_running(ctl, p))
			return -EBUSY;
	return 0;
}

static int ctl_suspend_late(struct device *dev)
{
	struct ctl *ctl = dev_get_drvdata(dev);
	int ret;

	/* ok: runtime-pm-while-disabled */
	ret = pm_runtime_resume_and_get(ctl->dev);
	if (ret)
		return ret;
	writel(0, ctl->regs);
	return 0;
}

static int ctl_resume_early(struct device *dev)
{
	struct ctl *ctl = dev_get_drvdata(dev);

	writel(1, ctl->regs);
	pm_runtime_mark_last_busy(ctl->dev);
	/* ok: runtime-pm-while-disabled */
	pm_runtime_put_autosuspend(ctl->dev);
	return 0;
}

static int ctl_runtime_suspend(struct device *dev)
{
	return 0;
}

static int ctl_runtime_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops ctl_pm_ops = {
	.prepare = ctl_prepare,
	LATE_SYSTEM_SLEEP_PM_OPS(ctl_suspend_late, ctl_resume_early)
	RUNTIME_PM_OPS(ctl_runtime_suspend, ctl_runtime_resume, NULL)
};

static int ctl_probe(struct platform_device *pdev)
{
	pm_runtime_set_autosuspend_delay(&pdev->dev, 200);
	pm_runtime_use_autosuspend(&pdev->dev);
	/* expect: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);
	return 0;
}

static struct platform_driver ctl_driver = {
	.probe = ctl_probe,
	.driver = {
		.name = "ctl",
		.pm = pm_ptr(&ctl_pm_ops),
	},
};
module_platform_driver(ctl_driver);
