// SPDX-License-Identifier: GPL-2.0
/* With a PM-core managed wake IRQ, wakeup policy changes in noirq come too late as well. */
#include <linux/platform_device.h>
#include <linux/pm_wakeirq.h>

static int tmr_attach_wake(struct device *dev, int irq)
{
	device_init_wakeup(dev, true);
	return dev_pm_set_dedicated_wake_irq(dev, irq);
}

static int tmr_suspend_noirq(struct device *dev)
{
	/* expect: wake-setup-in-noirq */
	device_set_wakeup_enable(dev, true);
	return 0;
}

static int tmr_resume_noirq(struct device *dev)
{
	/* ok: wake-setup-in-noirq */
	if (device_may_wakeup(dev))
		dev_dbg(dev, "woken\n");
	return 0;
}

static const struct dev_pm_ops tmr_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(tmr_suspend_noirq, tmr_resume_noirq)
};
