// SPDX-License-Identifier: GPL-2.0
/* The parent of i2c_foo.0 in rpm_*.txt: runtime PM only. */
#include <linux/pci.h>
#include <linux/pm_runtime.h>

static int foo_lpss_runtime_suspend(struct device *dev)
{
	return 0;
}

static int foo_lpss_runtime_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops foo_lpss_pm = {
	RUNTIME_PM_OPS(foo_lpss_runtime_suspend, foo_lpss_runtime_resume, NULL)
};

static struct pci_driver foo_lpss_driver = {
	.name = "foo_lpss",
	.driver.pm = &foo_lpss_pm,
};
module_pci_driver(foo_lpss_driver);
