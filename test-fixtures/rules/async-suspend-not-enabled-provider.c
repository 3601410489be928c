// SPDX-License-Identifier: GPL-2.0
/* A GPIO controller: its consumers are not its children and rely on the synchronous
 * dpm_list order (it resumes before them), so it stays synchronous whatever it costs. */
#include <linux/delay.h>
#include <linux/gpio/driver.h>
#include <linux/platform_device.h>

struct expg {
	struct gpio_chip gc;
};

static int expg_suspend(struct device *dev)
{
	return 0;
}

static int expg_resume(struct device *dev)
{
	/* the expander needs 57 ms after power-up */
	usleep_range(19000, 20000);
	usleep_range(19000, 20000);
	usleep_range(19000, 20000);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(expg_pm_ops, expg_suspend, expg_resume);

static int expg_probe(struct platform_device *pdev)
{
	struct expg *e = devm_kzalloc(&pdev->dev, sizeof(*e), GFP_KERNEL);

	if (!e)
		return -ENOMEM;
	return devm_gpiochip_add_data(&pdev->dev, &e->gc, e);
}

/* ok: async-suspend-not-enabled */
static struct platform_driver expg_driver = {
	.probe = expg_probe,
	.driver = {
		.name = "expg",
		.pm = pm_sleep_ptr(&expg_pm_ops),
	},
};
