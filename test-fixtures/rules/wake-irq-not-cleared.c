// SPDX-License-Identifier: GPL-2.0
/* wake-irq-not-cleared: a wake IRQ set up in probe and never cleared */
#include <linux/i2c.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/pm_wakeirq.h>

struct foo { int irq; };

static int a_probe(struct platform_device *pdev)
{
	struct foo *foo = platform_get_drvdata(pdev);
	int ret;

	device_init_wakeup(&pdev->dev, true);
	/* expect: wake-irq-not-cleared(warning) */
	ret = dev_pm_set_wake_irq(&pdev->dev, foo->irq);
	if (ret)
		goto err_wakeup;
	return 0;

err_wakeup:
	device_init_wakeup(&pdev->dev, false);
	return ret;
}

static void a_remove(struct platform_device *pdev)
{
	device_init_wakeup(&pdev->dev, false);
}

static struct platform_driver a_driver = {
	.probe = a_probe,
	.remove_new = a_remove,
	.driver = { .name = "a" },
};
module_platform_driver(a_driver);

static int b_probe(struct platform_device *pdev)
{
	struct foo *foo = platform_get_drvdata(pdev);

	/* ok: wake-irq-not-cleared */
	return dev_pm_set_dedicated_wake_irq(&pdev->dev, foo->irq);
}

static void b_remove(struct platform_device *pdev)
{
	dev_pm_clear_wake_irq(&pdev->dev);
}

static struct platform_driver b_driver = {
	.probe = b_probe,
	.remove_new = b_remove,
	.driver = { .name = "b" },
};
module_platform_driver(b_driver);

/* the I2C core clears the client's wake IRQ after a failed probe and after remove */
static int c_probe(struct i2c_client *client)
{
	/* ok: wake-irq-not-cleared */
	return dev_pm_set_wake_irq(&client->dev, client->irq);
}

static struct i2c_driver c_driver = {
	.driver = { .name = "c" },
	.probe = c_probe,
};
module_i2c_driver(c_driver);
