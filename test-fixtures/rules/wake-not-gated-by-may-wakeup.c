// SPDX-License-Identifier: GPL-2.0
/* wake-not-gated-by-may-wakeup: wake IRQ armed regardless of the user's wakeup policy. */
#include <linux/interrupt.h>
#include <linux/platform_device.h>

struct btn {
	int irq;
	bool irq_wake;
	bool no_irq;
};

static int btn_probe(struct platform_device *pdev)
{
	/* the device is declared wakeup-capable: user space can turn its wakeup off */
	device_init_wakeup(&pdev->dev, true);
	return 0;
}

static int btn_suspend(struct device *dev)
{
	struct btn *b = dev_get_drvdata(dev);

	/* expect: wake-not-gated-by-may-wakeup */
	enable_irq_wake(b->irq);
	return 0;
}

static int btn_resume(struct device *dev)
{
	struct btn *b = dev_get_drvdata(dev);

	/* re-reading the policy is fine: user space is frozen between suspend and resume */
	if (device_may_wakeup(dev))
		/* ok: wake-not-gated-by-may-wakeup */
		disable_irq_wake(b->irq);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(btn_pm_ops, btn_suspend, btn_resume);

/* Armed under one more condition than it is disarmed: not reported (the resume side is not
 * judged: such conditions were invariants in practice). */
static int pad_suspend(struct device *dev)
{
	struct btn *b = dev_get_drvdata(dev);

	if (device_may_wakeup(dev) && !b->no_irq)
		/* ok: wake-not-gated-by-may-wakeup */
		enable_irq_wake(b->irq);
	return 0;
}

static int pad_resume(struct device *dev)
{
	struct btn *b = dev_get_drvdata(dev);

	if (device_may_wakeup(dev))
		/* ok: wake-not-gated-by-may-wakeup */
		disable_irq_wake(b->irq);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(pad_pm_ops, pad_suspend, pad_resume);

static struct platform_driver btn_driver = {
	.driver = {
		.name = "btn",
		.pm = pm_sleep_ptr(&btn_pm_ops),
	},
};

/* The right way: gate on the policy at suspend, remember, undo exactly that. */
static void key_arm(struct btn *b)
{
	/* ok: wake-not-gated-by-may-wakeup */
	b->irq_wake = !enable_irq_wake(b->irq);
}

static int key_suspend(struct device *dev)
{
	struct btn *b = dev_get_drvdata(dev);

	if (!device_may_wakeup(dev))
		return 0;
	key_arm(b);
	return 0;
}

static int key_resume(struct device *dev)
{
	struct btn *b = dev_get_drvdata(dev);

	if (b->irq_wake) {
		/* ok: wake-not-gated-by-may-wakeup */
		disable_irq_wake(b->irq);
		b->irq_wake = false;
	}
	return 0;
}

static int key2_suspend(struct device *dev)
{
	struct btn *b = dev_get_drvdata(dev);

	if (device_may_wakeup(dev))
		/* ok: wake-not-gated-by-may-wakeup */
		enable_irq_wake(b->irq);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(key_pm_ops, key_suspend, key_resume);
static DEFINE_SIMPLE_DEV_PM_OPS(key2_pm_ops, key2_suspend, key_resume);
