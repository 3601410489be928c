// SPDX-License-Identifier: GPL-2.0
/* Part of the two-file module "bar" (see Makefile): KBUILD_MODNAME is "bar", not "bar_main". */
#include <linux/pci.h>
#include "bar.h"

static int bar_suspend_noirq(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops bar_pm_ops = {
	.suspend = bar_suspend,
	.suspend_noirq = bar_suspend_noirq,
};

static int bar_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	return 0;
}

static struct pci_driver bar_driver = {
	.name = KBUILD_MODNAME,
	.probe = bar_probe,
	.driver.pm = &bar_pm_ops,
};
module_pci_driver(bar_driver);
