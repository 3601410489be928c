// SPDX-License-Identifier: GPL-2.0
/* async-suspend-not-enabled: synchronous platform drivers, by what their transitions cost. */
#include <linux/delay.h>
#include <linux/gpio/consumer.h>
#include <linux/platform_device.h>
#include <linux/regulator/consumer.h>

/* Delays under 20 ms each, so that only this rule speaks (not delay-beyond-spec). */
#define PWRC_SETTLE_US	19000

struct pwrc {
	struct gpio_desc *reset;
	struct regulator *vdd;
	bool powered;
};

/* 57 ms around the reset, on every resume: worth running in parallel. */
static int pwrc_reset(struct pwrc *p)
{
	gpiod_set_value_cansleep(p->reset, 1);
	usleep_range(PWRC_SETTLE_US, PWRC_SETTLE_US + 1000);
	gpiod_set_value_cansleep(p->reset, 0);
	usleep_range(PWRC_SETTLE_US, PWRC_SETTLE_US + 1000);
	usleep_range(PWRC_SETTLE_US, PWRC_SETTLE_US + 1000);
	return 0;
}

static int pwrc_suspend(struct device *dev)
{
	struct pwrc *p = dev_get_drvdata(dev);

	return regulator_disable(p->vdd);
}

static int pwrc_resume(struct device *dev)
{
	struct pwrc *p = dev_get_drvdata(dev);
	int ret;

	ret = regulator_enable(p->vdd);
	if (ret)
		return ret;
	return pwrc_reset(p);
}

static DEFINE_SIMPLE_DEV_PM_OPS(pwrc_pm_ops, pwrc_suspend, pwrc_resume);

static int pwrc_probe(struct platform_device *pdev)
{
	return 0;
}

/* expect: async-suspend-not-enabled */
static struct platform_driver pwrc_driver = {
	.probe = pwrc_probe,
	.driver = {
		.name = "pwrc",
		.pm = pm_sleep_ptr(&pwrc_pm_ops),
	},
};

/* Real work but short fixed delays (10 ms): below min_ms, nothing worth a patch. */
static int shrt_resume(struct device *dev)
{
	struct pwrc *p = dev_get_drvdata(dev);
	int ret;

	ret = regulator_enable(p->vdd);
	usleep_range(10000, 11000);
	return ret;
}

static DEFINE_SIMPLE_DEV_PM_OPS(shrt_pm_ops, pwrc_suspend, shrt_resume);

/* ok: async-suspend-not-enabled */
static struct platform_driver shrt_driver = {
	.probe = pwrc_probe,
	.driver = {
		.name = "shrt",
		.pm = pm_sleep_ptr(&shrt_pm_ops),
	},
};

/* The long delay is only on the error path (a retry after a failure). */
static int errp_resume(struct device *dev)
{
	struct pwrc *p = dev_get_drvdata(dev);
	int ret;

	ret = regulator_enable(p->vdd);
	if (ret) {
		dev_warn(dev, "retrying\n");
		usleep_range(19000, 20000);
		usleep_range(19000, 20000);
		usleep_range(19000, 20000);
		ret = regulator_enable(p->vdd);
	}
	return ret;
}

static DEFINE_SIMPLE_DEV_PM_OPS(errp_pm_ops, pwrc_suspend, errp_resume);

/* ok: async-suspend-not-enabled */
static struct platform_driver errp_driver = {
	.probe = pwrc_probe,
	.driver = {
		.name = "errp",
		.pm = pm_sleep_ptr(&errp_pm_ops),
	},
};

/* .prepare and .complete always run synchronously: async suspend would not change them. */
static int prep_prepare(struct device *dev)
{
	usleep_range(19000, 20000);
	usleep_range(19000, 20000);
	usleep_range(19000, 20000);
	return 0;
}

static void prep_complete(struct device *dev)
{
	usleep_range(19000, 20000);
	usleep_range(19000, 20000);
	usleep_range(19000, 20000);
}

static const struct dev_pm_ops prep_pm_ops = {
	.prepare = prep_prepare,
	.complete = prep_complete,
};

/* ok: async-suspend-not-enabled */
static struct platform_driver prep_driver = {
	.probe = pwrc_probe,
	.driver = {
		.name = "prep",
		.pm = &prep_pm_ops,
	},
};

/* The slow branch of a helper that the suspend callback calls with a constant which selects
 * the other branch (through a macro not evaluated here): which one runs is not claimed. */
#define POWER_IS_ON(pwr)	((pwr) <= FB_BLANK_NORMAL)

static int lcdp_power(struct pwrc *p, int power)
{
	if (POWER_IS_ON(power) && !p->powered) {
		usleep_range(19000, 20000);
		usleep_range(19000, 20000);
		usleep_range(19000, 20000);
		p->powered = true;
	} else if (!POWER_IS_ON(power) && p->powered) {
		p->powered = false;
	}
	return 0;
}

static int lcdp_suspend(struct device *dev)
{
	return lcdp_power(dev_get_drvdata(dev), FB_BLANK_POWERDOWN);
}

static int lcdp_resume(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(lcdp_pm_ops, lcdp_suspend, lcdp_resume);

/* ok: async-suspend-not-enabled */
static struct platform_driver lcdp_driver = {
	.probe = pwrc_probe,
	.driver = {
		.name = "lcdp",
		.pm = pm_sleep_ptr(&lcdp_pm_ops),
	},
};

/* DEFINE_RUNTIME_DEV_PM_OPS: system sleep runs the runtime callbacks through
 * pm_runtime_force_suspend/resume(), so their delays count. */
static int rtpm_runtime_suspend(struct device *dev)
{
	return 0;
}

static int rtpm_runtime_resume(struct device *dev)
{
	struct pwrc *p = dev_get_drvdata(dev);

	return pwrc_reset(p);
}

static DEFINE_RUNTIME_DEV_PM_OPS(rtpm_pm_ops, rtpm_runtime_suspend, rtpm_runtime_resume, NULL);

/* expect: async-suspend-not-enabled */
static struct platform_driver rtpm_driver = {
	.probe = pwrc_probe,
	.driver = {
		.name = "rtpm",
		.pm = pm_ptr(&rtpm_pm_ops),
	},
};
