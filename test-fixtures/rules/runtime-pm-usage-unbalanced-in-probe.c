// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-usage-unbalanced-in-probe: a usage count probe or remove takes and leaks */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

/* probe holds the device active while it sets up, and drops the count at the end; an error
 * return in between skips the put */
static int a_probe(struct platform_device *pdev)
{
	int ret;

	/* expect: runtime-pm-usage-unbalanced-in-probe(warning) */
	pm_runtime_get_noresume(&pdev->dev);
	pm_runtime_set_active(&pdev->dev);
	ret = devm_pm_runtime_enable(&pdev->dev);
	if (ret)
		goto err_put;

	ret = a_hw_init(pdev);
	if (ret)
		return ret;

	pm_runtime_put(&pdev->dev);
	return 0;

err_put:
	pm_runtime_put_noidle(&pdev->dev);
	return ret;
}

/* remove powers the device for its teardown and never drops the count */
static void a_remove(struct platform_device *pdev)
{
	/* expect: runtime-pm-usage-unbalanced-in-probe */
	pm_runtime_get_sync(&pdev->dev);
	a_hw_exit(pdev);
	pm_runtime_disable(&pdev->dev);
}

static struct platform_driver a_driver = {
	.probe = a_probe,
	.remove_new = a_remove,
	.driver = { .name = "a" },
};
module_platform_driver(a_driver);

/* balanced: the failed get holds nothing, the error label puts, remove puts */
static int b_probe(struct platform_device *pdev)
{
	int ret;

	ret = devm_pm_runtime_enable(&pdev->dev);
	if (ret)
		return ret;
	/* ok: runtime-pm-usage-unbalanced-in-probe */
	ret = pm_runtime_resume_and_get(&pdev->dev);
	if (ret < 0)
		return ret;
	ret = b_hw_init(pdev);
	if (ret)
		goto err_put;
	pm_runtime_put(&pdev->dev);
	return 0;

err_put:
	pm_runtime_put_noidle(&pdev->dev);
	return ret;
}

static void b_remove(struct platform_device *pdev)
{
	/* ok: runtime-pm-usage-unbalanced-in-probe */
	pm_runtime_get_sync(&pdev->dev);
	b_hw_exit(pdev);
	pm_runtime_disable(&pdev->dev);
	pm_runtime_put_noidle(&pdev->dev);
}

static struct platform_driver b_driver = {
	.probe = b_probe,
	.remove_new = b_remove,
	.driver = { .name = "b" },
};
module_platform_driver(b_driver);

/* PCI: the core holds a count over probe and remove; a driver takes back in remove what it
 * dropped in probe */
static int c_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	pm_runtime_put_noidle(&pdev->dev);
	return 0;
}

static void c_remove(struct pci_dev *pdev)
{
	/* ok: runtime-pm-usage-unbalanced-in-probe */
	pm_runtime_get_sync(&pdev->dev);
}

static struct pci_driver c_driver = {
	.name = "c",
	.probe = c_probe,
	.remove = c_remove,
};
module_pci_driver(c_driver);
