// SPDX-License-Identifier: GPL-2.0
/* A GPIO/irqchip provider applies wake state recorded by .irq_set_wake: not a finding. */
#include <linux/gpio/driver.h>
#include <linux/interrupt.h>
#include <linux/platform_device.h>

struct bar_gpio {
	struct gpio_chip gc;
	int parent_irq;
	u32 wake_mask;
};

static int bar_irq_set_wake(struct irq_data *d, unsigned int on)
{
	struct bar_gpio *bg = irq_data_get_irq_chip_data(d);

	if (on)
		bg->wake_mask |= BIT(irqd_to_hwirq(d));
	else
		bg->wake_mask &= ~BIT(irqd_to_hwirq(d));
	return 0;
}

static struct irq_chip bar_irq_chip = {
	.name = "bar-gpio",
	.irq_set_wake = bar_irq_set_wake,
};

static int bar_suspend_noirq(struct device *dev)
{
	struct bar_gpio *bg = dev_get_drvdata(dev);

	if (bg->wake_mask)
		/* ok: wake-setup-in-noirq */
		enable_irq_wake(bg->parent_irq);
	return 0;
}

static int bar_resume_noirq(struct device *dev)
{
	struct bar_gpio *bg = dev_get_drvdata(dev);

	if (bg->wake_mask)
		/* ok: wake-setup-in-noirq */
		disable_irq_wake(bg->parent_irq);
	return 0;
}

static const struct dev_pm_ops bar_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(bar_suspend_noirq, bar_resume_noirq)
};

static struct platform_driver bar_driver = {
	.driver = {
		.name = "bar-gpio",
		.pm = pm_sleep_ptr(&bar_pm_ops),
	},
};
module_platform_driver(bar_driver);
