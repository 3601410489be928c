// SPDX-License-Identifier: GPL-2.0
/* wake-not-gated-by-may-wakeup: a driver that never declares wakeup capability has no user
 * policy to honour (device_may_wakeup() is always false): arming unconditionally is its
 * design (a fuel-gauge alert, an RTC alarm), and the suggested gate would switch it off. */
#include <linux/interrupt.h>
#include <linux/platform_device.h>

struct gauge {
	int irq;
};

static int gauge_suspend(struct device *dev)
{
	struct gauge *g = dev_get_drvdata(dev);

	/* ok: wake-not-gated-by-may-wakeup */
	enable_irq_wake(g->irq);
	return 0;
}

static int gauge_resume(struct device *dev)
{
	struct gauge *g = dev_get_drvdata(dev);

	/* ok: wake-not-gated-by-may-wakeup */
	disable_irq_wake(g->irq);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(gauge_pm_ops, gauge_suspend, gauge_resume);

static struct platform_driver gauge_driver = {
	.driver = {
		.name = "gauge",
		.pm = pm_sleep_ptr(&gauge_pm_ops),
	},
};
