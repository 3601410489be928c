// SPDX-License-Identifier: GPL-2.0
/* wake-setup-in-noirq: wake IRQ set up after suspend_device_irqs() has run. */
#include <linux/interrupt.h>
#include <linux/platform_device.h>
#include <linux/pm_wakeirq.h>

struct foo {
	struct device *dev;
	int irq;
	bool wake_armed;
};

static void foo_set_wake(struct foo *foo, bool on)
{
	if (on)
		/* expect: wake-setup-in-noirq */
		enable_irq_wake(foo->irq);
	else
		/* resume_noirq: disarming before resume_device_irqs() loses nothing */
		/* ok: wake-setup-in-noirq */
		disable_irq_wake(foo->irq);
}

static int foo_suspend_noirq(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	if (device_may_wakeup(dev))
		foo_set_wake(foo, true);
	return 0;
}

static int foo_resume_noirq(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	if (foo->wake_armed)
		foo_set_wake(foo, false);
	/* ok: wake-setup-in-noirq */
	if (irqd_is_wakeup_set(irq_get_irq_data(foo->irq)))
		dev_dbg(dev, "wake irq still set\n");
	/* ok: wake-setup-in-noirq */
	enable_irq(foo->irq);
	return 0;
}

static int foo_poweroff_noirq(struct device *dev)
{
	/* No PM-core wake IRQ in this driver: a policy change is not an IRQ change. */
	/* ok: wake-setup-in-noirq */
	device_init_wakeup(dev, false);
	return 0;
}

static int foo_suspend(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	/* ok: wake-setup-in-noirq */
	if (device_may_wakeup(dev) && !enable_irq_wake(foo->irq))
		foo->wake_armed = true;
	return 0;
}

static int foo_resume(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	if (foo->wake_armed) {
		/* ok: wake-setup-in-noirq */
		disable_irq_wake(foo->irq);
		foo->wake_armed = false;
	}
	return 0;
}

static const struct dev_pm_ops foo_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(foo_suspend, foo_resume)
	.suspend_noirq = foo_suspend_noirq,
	.resume_noirq = foo_resume_noirq,
	.poweroff_noirq = foo_poweroff_noirq,
	.restore_noirq = foo_resume_noirq,
};

static struct platform_driver foo_driver = {
	.driver = {
		.name = "foo-wake",
		.pm = pm_sleep_ptr(&foo_pm_ops),
	},
};
module_platform_driver(foo_driver);
