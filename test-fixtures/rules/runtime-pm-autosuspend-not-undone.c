// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-autosuspend-not-undone: runtime PM disabled with autosuspend left on */
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

/* remove disables runtime PM but keeps autosuspend on (the common fix between 6.1 and 6.12) */
static int a_probe(struct platform_device *pdev)
{
	int ret;

	pm_runtime_set_autosuspend_delay(&pdev->dev, 100);
	/* expect: runtime-pm-autosuspend-not-undone(warning) */
	pm_runtime_use_autosuspend(&pdev->dev);
	pm_runtime_enable(&pdev->dev);

	ret = a_register(pdev);
	if (ret)
		goto err_pm;
	return 0;

err_pm:
	pm_runtime_dont_use_autosuspend(&pdev->dev);
	pm_runtime_disable(&pdev->dev);
	return ret;
}

static void a_remove(struct platform_device *pdev)
{
	a_unregister(pdev);
	pm_runtime_disable(&pdev->dev);
}

static struct platform_driver a_driver = {
	.probe = a_probe,
	.remove_new = a_remove,
	.driver = { .name = "a" },
};
module_platform_driver(a_driver);

/* the error label disables without turning autosuspend off; remove does both */
static int b_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	int ret;

	pm_runtime_enable(dev);
	/* expect: runtime-pm-autosuspend-not-undone */
	pm_runtime_use_autosuspend(dev);
	ret = b_register(pdev);
	if (ret)
		goto err_disable;
	return 0;

err_disable:
	pm_runtime_disable(dev);
	return ret;
}

static void b_remove(struct platform_device *pdev)
{
	pm_runtime_dont_use_autosuspend(&pdev->dev);
	pm_runtime_disable(&pdev->dev);
}

static struct platform_driver b_driver = {
	.probe = b_probe,
	.remove_new = b_remove,
	.driver = { .name = "b" },
};
module_platform_driver(b_driver);

/* devm_pm_runtime_enable() undoes autosuspend too (pm_runtime_disable_action()) */
static int c_probe(struct platform_device *pdev)
{
	int ret;

	/* ok: runtime-pm-autosuspend-not-undone */
	pm_runtime_use_autosuspend(&pdev->dev);
	ret = devm_pm_runtime_enable(&pdev->dev);
	if (ret)
		return ret;
	return c_register(pdev);
}

static struct platform_driver c_driver = {
	.probe = c_probe,
	.driver = { .name = "c" },
};
module_platform_driver(c_driver);

/* runtime PM left enabled as well: that is runtime-pm-enable-not-undone's finding alone */
static int d_probe(struct platform_device *pdev)
{
	/* ok: runtime-pm-autosuspend-not-undone */
	pm_runtime_use_autosuspend(&pdev->dev);
	/* expect: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);
	return 0;
}

static void d_remove(struct platform_device *pdev)
{
	d_unregister(pdev);
}

static struct platform_driver d_driver = {
	.probe = d_probe,
	.remove_new = d_remove,
	.driver = { .name = "d" },
};
module_platform_driver(d_driver);
