// SPDX-License-Identifier: GPL-2.0
/* async-suspend-not-enabled: waits in noirq callbacks do not count (issue 20). A host
 * controller's link timing there (PERST#) is what its children wait for anyway, and the
 * noirq phase ends by waiting for all async work: async gains nothing. */
#include <linux/delay.h>
#include <linux/gpio/consumer.h>
#include <linux/platform_device.h>

struct hostc {
	struct gpio_desc *perst;
	void __iomem *base;
};

static int hostc_probe(struct platform_device *pdev)
{
	return 0;
}

static int hostc_resume_noirq(struct device *dev)
{
	struct hostc *h = dev_get_drvdata(dev);

	gpiod_set_value(h->perst, 1);
	/* the link needs reset held for at least 100 ms */
	msleep(100);
	gpiod_set_value(h->perst, 0);
	/* and 100 ms after release before the first config access */
	msleep(100);
	return 0;
}

static int hostc_suspend_noirq(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops hostc_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(hostc_suspend_noirq, hostc_resume_noirq)
};

/* ok: async-suspend-not-enabled */
static struct platform_driver hostc_driver = {
	.probe = hostc_probe,
	.driver = {
		.name = "hostc",
		.pm = pm_sleep_ptr(&hostc_pm_ops),
	},
};

/* the same waits in .resume: every synchronous device waits behind them */
static int hostm_resume(struct device *dev)
{
	return hostc_resume_noirq(dev);
}

static DEFINE_SIMPLE_DEV_PM_OPS(hostm_pm_ops, NULL, hostm_resume);

/* expect: async-suspend-not-enabled */
static struct platform_driver hostm_driver = {
	.probe = hostc_probe,
	.driver = {
		.name = "hostm",
		.pm = pm_sleep_ptr(&hostm_pm_ops),
	},
};

static int __init hostc_init(void)
{
	int ret = platform_driver_register(&hostc_driver);

	return ret ? ret : platform_driver_register(&hostm_driver);
}
module_init(hostc_init);
