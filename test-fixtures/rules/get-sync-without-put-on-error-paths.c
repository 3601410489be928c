// SPDX-License-Identifier: GPL-2.0
/*
 * get-sync-without-put-on-error: where the result is tested (later, after #ifdef/#else,
 * inside WARN_ON) and where the failure path goes (labels, helpers that put).
 */
#include <linux/input.h>
#include <linux/pm_runtime.h>

struct bar {
	struct device *dev;
	struct input_dev *input;
	void __iomem *regs;
	struct mutex lock;
};

static void bar_tx_done(struct bar *bar)
{
	pm_runtime_mark_last_busy(bar->dev);
	pm_runtime_put_autosuspend(bar->dev);
}

/* the label's code calls a helper that puts */
static int bar_send(struct bar *bar)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(bar->dev);
	if (ret < 0)
		goto tx_fail;
	writel(1, bar->regs);
	return 0;

tx_fail:
	bar_tx_done(bar);
	return ret;
}

/* the result is tested after an #ifdef/#else block; the label holds no put */
static int bar_bind(struct bar *bar)
{
	int ret;

	ret = bar_sched_init(bar);
	if (ret)
		return ret;

#ifdef CONFIG_PM
	/* expect: get-sync-without-put-on-error(warning) */
	ret = pm_runtime_get_sync(bar->dev);
#else
	ret = bar_clk_enable(bar);
#endif
	if (ret < 0)
		goto out_sched;

	writel(1, bar->regs);
	pm_runtime_put_autosuspend(bar->dev);
	return 0;

out_sched:
	bar_sched_fini(bar);
	return ret;
}

/* the result is tested a few statements later */
static int bar_read(struct bar *bar, u32 *val)
{
	int ret;

	/* expect: get-sync-without-put-on-error(warning) */
	ret = pm_runtime_get_sync(bar->dev);
	mutex_lock(&bar->lock);
	if (ret < 0) {
		mutex_unlock(&bar->lock);
		return ret;
	}
	*val = readl(bar->regs);
	mutex_unlock(&bar->lock);
	pm_runtime_put(bar->dev);
	return 0;
}

/* the put comes before the test: nothing leaks */
static int bar_poke(struct bar *bar)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(bar->dev);
	writel(1, bar->regs);
	pm_runtime_put(bar->dev);
	if (ret < 0)
		return ret;
	return 0;
}

/* WARN_ON() around the test, and a goto to a label without a put */
static irqreturn_t bar_irq(int irq, void *data)
{
	struct bar *bar = data;
	int ret;

	/* expect: get-sync-without-put-on-error(warning) */
	ret = pm_runtime_get_sync(bar->dev);
	if (WARN_ON(ret < 0))
		goto out;
	writel(1, bar->regs);
	pm_runtime_put(bar->dev);
out:
	return IRQ_HANDLED;
}

/* the failure is only logged: the function goes on and puts */
static void bar_shutdown(struct bar *bar)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(bar->dev);
	if (ret < 0)
		dev_warn(bar->dev, "failed to resume: %d\n", ret);
	writel(0, bar->regs);
	pm_runtime_put_sync(bar->dev);
}

/* the success test's else branch returns without a put */
static int bar_flush(struct bar *bar)
{
	int ret;

	/* expect: get-sync-without-put-on-error(warning) */
	ret = pm_runtime_get_sync(bar->dev);
	if (ret >= 0) {
		writel(2, bar->regs);
		pm_runtime_put(bar->dev);
	} else {
		return ret;
	}
	return 0;
}

/* input_dev.open, assigned through a typed variable: a failing open is not closed */
static int bar_input_open(struct input_dev *input)
{
	struct bar *bar = input_get_drvdata(input);

	/* expect: get-sync-without-put-on-error(warning) */
	return pm_runtime_get_sync(bar->dev);
}

static void bar_input_close(struct input_dev *input)
{
	struct bar *bar = input_get_drvdata(input);

	pm_runtime_put(bar->dev);
}

static int bar_input_setup(struct bar *bar)
{
	struct input_dev *input = devm_input_allocate_device(bar->dev);

	input->open = bar_input_open;
	input->close = bar_input_close;
	bar->input = input;
	return input_register_device(input);
}

/* the function drops its caller's reference and takes it back: the caller's error path puts */
static int bar_restrap(struct bar *bar)
{
	int ret;

	ret = pm_runtime_put_sync(bar->dev);
	if (ret < 0)
		return ret;
	writel(3, bar->regs);
	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(bar->dev);
	if (ret < 0)
		return ret;
	return 0;
}

/* the same without the put before: an acquire helper that fails with the count raised */
static int bar_acquire(struct bar *bar)
{
	int ret;

	writel(3, bar->regs);
	/* expect: get-sync-without-put-on-error(warning) */
	ret = pm_runtime_get_sync(bar->dev);
	if (ret < 0)
		return ret;
	return 0;
}

static int bar_use(struct bar *bar)
{
	int ret = bar_acquire(bar);

	if (ret)
		return ret;
	writel(4, bar->regs);
	pm_runtime_put(bar->dev);
	return 0;
}

/* The driver's own release half (poweroff for poweron) puts, and runs after a failure too (a
 * flag left set, as venus does): no leak, and a put here would underflow the count. */
static int core_poweron(struct device *dev)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(dev);
	if (ret < 0)
		return ret;
	return 0;
}

static void core_poweroff(struct device *dev)
{
	pm_runtime_put_sync(dev);
}
