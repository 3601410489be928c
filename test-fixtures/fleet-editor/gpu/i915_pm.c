// A driver registering as "i915" (the name sleepgraph recorded in ../shared/traces), with the
// callbacks and delay calls those captures measured: a fixture for the fleet's figures in
// the editor (tests/test_lsp_fleet.py). Not the real driver's code.
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/pci.h>

static void intel_dp_link_down(struct pci_dev *pdev)
{
	msleep(50);
}

static void edp_panel_vdd_on(struct pci_dev *pdev)
{
	msleep(200);
}

static int i915_pm_suspend(struct device *dev)
{
	intel_dp_link_down(to_pci_dev(dev));
	return 0;
}

static int i915_pm_suspend_late(struct device *dev)
{
	mdelay(10); /* not a site the captures probed: the callback's figures apply */
	return 0;
}

static int i915_pm_resume_early(struct device *dev)
{
	return 0;
}

static int i915_pm_resume(struct device *dev)
{
	edp_panel_vdd_on(to_pci_dev(dev));
	return 0;
}

static const struct dev_pm_ops i915_pm_ops = {
	.suspend = i915_pm_suspend,
	.suspend_late = i915_pm_suspend_late,
	.resume_early = i915_pm_resume_early,
	.resume = i915_pm_resume,
};

static struct pci_driver i915_pci_driver = {
	.name = "i915",
	.driver.pm = &i915_pm_ops,
};
module_pci_driver(i915_pci_driver);
