// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-enable-not-undone: pm_runtime_enable() in probe, undone on every path or not */
#include <linux/amba/bus.h>
#include <linux/iio/iio.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

struct foo { struct device *dev; struct clk *clk; void __iomem *base; };

/* an early return after the enable skips the label that disables */
static int a_probe(struct platform_device *pdev)
{
	struct foo *foo;
	int ret;

	foo = devm_kzalloc(&pdev->dev, sizeof(*foo), GFP_KERNEL);
	if (!foo)
		return -ENOMEM;

	/* expect: runtime-pm-enable-not-undone(warning) */
	pm_runtime_enable(&pdev->dev);

	ret = clk_prepare_enable(foo->clk);
	if (ret)
		return ret;

	ret = a_register(foo);
	if (ret)
		goto err_disable;

	return 0;

err_disable:
	pm_runtime_disable(&pdev->dev);
	clk_disable_unprepare(foo->clk);
	return ret;
}

static void a_remove(struct platform_device *pdev)
{
	pm_runtime_disable(&pdev->dev);
}

static struct platform_driver a_driver = {
	.probe = a_probe,
	.remove_new = a_remove,
	.driver = { .name = "a" },
};
module_platform_driver(a_driver);

/* every probe path disables, but remove does not */
static int b_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	int ret;

	/* expect: runtime-pm-enable-not-undone */
	pm_runtime_enable(dev);
	ret = b_setup(dev);
	if (ret) {
		pm_runtime_disable(dev);
		return ret;
	}
	return 0;
}

static int b_remove(struct platform_device *pdev)
{
	b_teardown(&pdev->dev);
	return 0;
}

static struct platform_driver b_driver = {
	.probe = b_probe,
	.remove = b_remove,
	.driver = { .name = "b" },
};
module_platform_driver(b_driver);

/* balanced: a label ladder, and remove disables through a helper */
static void c_cleanup(struct device *dev)
{
	pm_runtime_disable(dev);
}

static int c_probe(struct platform_device *pdev)
{
	int ret;

	/* ok: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);
	ret = c_setup(pdev);
	if (ret < 0)
		goto err_pm;
	ret = c_register(pdev);
	if (ret < 0)
		goto err_setup;
	return 0;

err_setup:
	c_unsetup(pdev);
err_pm:
	pm_runtime_disable(&pdev->dev);
	return ret;
}

static int c_remove(struct platform_device *pdev)
{
	c_cleanup(&pdev->dev);
	return 0;
}

static struct platform_driver c_driver = {
	.probe = c_probe,
	.remove = c_remove,
	.driver = { .name = "c" },
};
module_platform_driver(c_driver);

/* device-managed: devm_pm_runtime_enable(), or a devm action that disables */
static void d_disable(void *data)
{
	pm_runtime_disable(data);
}

static int d_probe(struct platform_device *pdev)
{
	int ret;

	/* ok: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);
	ret = devm_add_action_or_reset(&pdev->dev, d_disable, &pdev->dev);
	if (ret)
		return ret;
	return d_register(pdev);
}

static struct platform_driver d_driver = {
	.probe = d_probe,
	.driver = { .name = "d" },
};
module_platform_driver(d_driver);

/* the helper that enables undoes its own failure: its result's test is no leak */
static int e_pm_init(struct device *dev)
{
	int ret;

	pm_runtime_set_active(dev);
	pm_runtime_enable(dev);
	ret = pm_runtime_resume_and_get(dev);
	if (ret < 0) {
		pm_runtime_disable(dev);
		return ret;
	}
	return 0;
}

static int e_probe(struct platform_device *pdev)
{
	int ret;

	/* ok: runtime-pm-enable-not-undone */
	ret = e_pm_init(&pdev->dev);
	if (ret)
		return ret;
	pm_runtime_put(&pdev->dev);
	return 0;
}

static int e_remove(struct platform_device *pdev)
{
	pm_runtime_force_suspend(&pdev->dev);  /* disables runtime PM */
	return 0;
}

static struct platform_driver e_driver = {
	.probe = e_probe,
	.remove = e_remove,
	.driver = { .name = "e" },
};
module_platform_driver(e_driver);

/* a child device the driver registers: deleting it disables its runtime PM */
static int f_probe(struct platform_device *pdev)
{
	struct iio_dev *indio_dev = devm_iio_device_alloc(&pdev->dev, 0);

	/* ok: runtime-pm-enable-not-undone */
	pm_runtime_enable(&indio_dev->dev);
	return devm_iio_device_register(&pdev->dev, indio_dev);
}

static struct platform_driver f_driver = {
	.probe = f_probe,
	.driver = { .name = "f" },
};
module_platform_driver(f_driver);

/* built in for good, no .remove: it is never unbound in practice */
static int g_probe(struct platform_device *pdev)
{
	/* ok: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);
	return 0;
}

static struct platform_driver g_driver = {
	.probe = g_probe,
	.driver = { .name = "g" },
};
builtin_platform_driver(g_driver);
