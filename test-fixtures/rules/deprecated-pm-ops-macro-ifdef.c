// SPDX-License-Identifier: GPL-2.0
/* SET_*_PM_OPS inside #ifdef CONFIG_PM, and the modern form that is fine. */
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

#ifdef CONFIG_PM
static int dsp_runtime_suspend(struct device *dev)
{
	return 0;
}

static int dsp_runtime_resume(struct device *dev)
{
	return 0;
}
#endif

static const struct dev_pm_ops dsp_pm_ops = {
	/* expect: deprecated-pm-ops-macro */
	SET_RUNTIME_PM_OPS(dsp_runtime_suspend, dsp_runtime_resume, NULL)
};

static struct platform_driver dsp_driver = {
	.driver = {
		.name = "dsp",
		.pm = &dsp_pm_ops,
	},
};

static int lamp_suspend(struct device *dev)
{
	return 0;
}

static int lamp_resume(struct device *dev)
{
	return 0;
}

/* ok: deprecated-pm-ops-macro */
static DEFINE_SIMPLE_DEV_PM_OPS(lamp_pm_ops, lamp_suspend, lamp_resume);

static const struct dev_pm_ops lamp2_pm_ops = {
	/* ok: deprecated-pm-ops-macro */
	SET_SYSTEM_SLEEP_PM_OPS(lamp_suspend, lamp_resume)
};

static struct platform_driver lamp_driver = {
	.driver = {
		.name = "lamp",
		.pm = pm_sleep_ptr(&lamp_pm_ops),
	},
};
