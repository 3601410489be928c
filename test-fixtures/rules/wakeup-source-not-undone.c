// SPDX-License-Identifier: GPL-2.0
/* wakeup-source-not-undone: a wakeup source registered in probe and left behind */
#include <linux/i2c.h>
#include <linux/input.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_wakeup.h>

/* remove never unregisters it, and a failure after it returns without either */
static int a_probe(struct platform_device *pdev)
{
	int ret;

	/* expect: wakeup-source-not-undone(warning) */
	device_init_wakeup(&pdev->dev, true);
	ret = a_register(pdev);
	if (ret)
		return ret;
	return 0;
}

static void a_remove(struct platform_device *pdev)
{
	a_unregister(pdev);
}

static struct platform_driver a_driver = {
	.probe = a_probe,
	.remove_new = a_remove,
	.driver = { .name = "a" },
};
module_platform_driver(a_driver);

/* balanced: the error label and remove turn it off */
static int b_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	int ret;

	/* ok: wakeup-source-not-undone */
	device_init_wakeup(dev, true);
	ret = b_register(pdev);
	if (ret)
		goto err_wakeup;
	return 0;

err_wakeup:
	device_init_wakeup(dev, false);
	return ret;
}

static void b_remove(struct platform_device *pdev)
{
	device_init_wakeup(&pdev->dev, false);
}

static struct platform_driver b_driver = {
	.probe = b_probe,
	.remove_new = b_remove,
	.driver = { .name = "b" },
};
module_platform_driver(b_driver);

/* the I2C core turns wakeup off for the client after a failed probe and after remove */
static int c_probe(struct i2c_client *client)
{
	/* ok: wakeup-source-not-undone */
	device_init_wakeup(&client->dev, true);
	return 0;
}

static void c_remove(struct i2c_client *client)
{
}

static struct i2c_driver c_driver = {
	.driver = { .name = "c" },
	.probe = c_probe,
	.remove = c_remove,
};
module_i2c_driver(c_driver);

/* a child input device: its wakeup source goes when it is unregistered */
static int d_probe(struct platform_device *pdev)
{
	struct input_dev *input = devm_input_allocate_device(&pdev->dev);

	/* ok: wakeup-source-not-undone */
	device_init_wakeup(&input->dev, true);
	/* ok: wakeup-source-not-undone */
	device_init_wakeup(&pdev->dev, false);
	return input_register_device(input);
}

static void d_remove(struct platform_device *pdev)
{
}

static struct platform_driver d_driver = {
	.probe = d_probe,
	.remove_new = d_remove,
	.driver = { .name = "d" },
};
module_platform_driver(d_driver);

/* Set up and turned off again below, past only the set-up's own failure test (caam jr.c:676,
 * dwmac-stm32.c:495): nothing stays registered; an exit in between leaks. */
static int e_probe(struct platform_device *pdev)
{
	int err;

	/* ok: wakeup-source-not-undone */
	err = device_init_wakeup(&pdev->dev, true);
	if (err)
		return err;
	device_set_wakeup_enable(&pdev->dev, false);
	return 0;
}

static int f_probe(struct platform_device *pdev)
{
	int err;

	/* expect: wakeup-source-not-undone */
	err = device_init_wakeup(&pdev->dev, true);
	if (err)
		return err;
	if (pdev->id < 0)
		return -EINVAL;
	device_set_wakeup_enable(&pdev->dev, false);
	return 0;
}

static void ef_remove(struct platform_device *pdev)
{
}

static struct platform_driver e_driver = {
	.probe = e_probe,
	.remove_new = ef_remove,
	.driver = { .name = "e" },
};
module_platform_driver(e_driver);

static struct platform_driver f_driver = {
	.probe = f_probe,
	.remove_new = ef_remove,
	.driver = { .name = "f" },
};
module_platform_driver(f_driver);
