// SPDX-License-Identifier: GPL-2.0
/* deprecated-pm-ops-macro: callbacks under #ifdef CONFIG_PM_SLEEP are converted by dropping
 * the #ifdef, so they are compiled without PM_SLEEP too. Not reported where that would not
 * build: they reach a helper, or a struct member, that the file declares only in another
 * CONFIG_PM_SLEEP block (which the patch keeps). Reported, naming the guard that is there
 * (CONFIG_PM_SLEEP, not CONFIG_PM), where everything they use always exists. */
#include <linux/platform_device.h>

struct uart {
	void __iomem *regs;
#ifdef CONFIG_PM_SLEEP
	u32 saved_lcr;
#endif
};

#ifdef CONFIG_PM_SLEEP
static void uart_save(struct uart *u)
{
	u->saved_lcr = readl(u->regs);
}
#endif

#ifdef CONFIG_PM_SLEEP
static int uart_suspend(struct device *dev)
{
	uart_save(dev_get_drvdata(dev));
	return 0;
}

static int uart_resume(struct device *dev)
{
	return 0;
}
#endif

static const struct dev_pm_ops uart_pm_ops = {
	/* ok: deprecated-pm-ops-macro */
	SET_SYSTEM_SLEEP_PM_OPS(uart_suspend, uart_resume)
};

struct timer {
	void __iomem *regs;
	u32 ctrl;
};

#ifdef CONFIG_PM_SLEEP
static int timer_suspend(struct device *dev)
{
	struct timer *t = dev_get_drvdata(dev);

	t->ctrl = readl(t->regs);
	return 0;
}

static int timer_resume(struct device *dev)
{
	struct timer *t = dev_get_drvdata(dev);

	writel(t->ctrl, t->regs);
	return 0;
}
#endif

static const struct dev_pm_ops timer_pm_ops = {
	/* expect: deprecated-pm-ops-macro(info) */
	SET_SYSTEM_SLEEP_PM_OPS(timer_suspend, timer_resume)
};

static struct platform_driver uart_driver = {
	.driver = {
		.name = "uart",
		.pm = &uart_pm_ops,
	},
};

static struct platform_driver timer_driver = {
	.driver = {
		.name = "timer",
		.pm = &timer_pm_ops,
	},
};
