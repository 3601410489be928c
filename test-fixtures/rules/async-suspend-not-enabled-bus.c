// SPDX-License-Identifier: GPL-2.0
/* A PCI driver: the PCI core enables async suspend itself; trivial callbacks are ignored. */
#include <linux/pci.h>
#include <linux/platform_device.h>

static int ham_suspend(struct device *dev)
{
	struct pci_dev *pdev = to_pci_dev(dev);

	pci_save_state(pdev);
	return 0;
}

static int ham_resume(struct device *dev)
{
	pci_restore_state(to_pci_dev(dev));
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(ham_pm_ops, ham_suspend, ham_resume);

static int ham_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	return pcim_enable_device(pdev);
}

/* ok: async-suspend-not-enabled */
static struct pci_driver ham_driver = {
	.name = "ham",
	.probe = ham_probe,
	.driver.pm = &ham_pm_ops,
};
module_pci_driver(ham_driver);

static int egg_suspend(struct device *dev)
{
	return 0;
}

static int egg_resume(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(egg_pm_ops, egg_suspend, egg_resume);

static int egg_probe(struct platform_device *pdev)
{
	return 0;
}

/* ok: async-suspend-not-enabled */
static struct platform_driver egg_driver = {
	.probe = egg_probe,
	.driver = {
		.name = "egg",
		.pm = pm_sleep_ptr(&egg_pm_ops),
	},
};
