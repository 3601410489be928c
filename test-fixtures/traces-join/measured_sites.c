// SPDX-License-Identifier: GPL-2.0
/*
 * Delay sites named like those the pm-graph 4.6 ivybridge capture measured
 * (../shared/traces/pm-graph-4.6/suspend-160422-155735-ivybridge-dev-late), to show how
 * `dpmlens check --traces` joins them: intel_dp_link_down()'s msleep(50) and
 * edp_panel_vdd_on()'s msleep(200) ran on the critical path of suspend and resume; the
 * ehci_bus_suspend() busy-wait was measured at 0.3 ms, off the critical path.
 */
#include <linux/delay.h>
#include <linux/pm.h>

struct dp {
	void __iomem *regs;
};

static void intel_dp_link_down(struct dp *dp)
{
	writel(0, dp->regs);
	msleep(50);
}

static void edp_panel_vdd_on(struct dp *dp)
{
	writel(1, dp->regs);
	msleep(200);
}

static int ehci_bus_suspend(struct dp *dp)
{
	writel(2, dp->regs);
	mdelay(60);
	return 0;
}

static int dp_suspend(struct device *dev)
{
	struct dp *dp = dev_get_drvdata(dev);

	intel_dp_link_down(dp);
	return ehci_bus_suspend(dp);
}

static int dp_resume(struct device *dev)
{
	edp_panel_vdd_on(dev_get_drvdata(dev));
	return 0;
}

static SIMPLE_DEV_PM_OPS(dp_pm_ops, dp_suspend, dp_resume);
