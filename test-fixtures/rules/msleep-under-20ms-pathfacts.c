// SPDX-License-Identifier: GPL-2.0
/* Path facts (issue 20): constant arguments along the chain into `&&` guards, delays behind
 * state cached on first use, and a loop that polls before it waits. */
#include <linux/delay.h>
#include <linux/platform_device.h>

#define IS_OLD_SOC	(boot_cpu_data.x86_model == 0x37)

struct cam {
	void __iomem *base;
	u8 *calib;
	bool tuned;
};

/* the suspend path passes on = false: the guarded sleep cannot run there */
static int cam_set_power(struct cam *cam, bool on)
{
	u32 val = on ? 3 : 0;

	if (IS_OLD_SOC && on)
		/* expect: msleep-under-20ms */
		msleep(10);
	writel(val, cam->base);
	return readl(cam->base + 4) == val ? 0 : -EIO;
}

static int cam_power_off(struct cam *cam)
{
	return cam_set_power(cam, false);
}

static int cam_power_on(struct cam *cam)
{
	return cam_set_power(cam, true);
}

/* the calibration is read once: the sleep before it is paid the first time only */
static int cam_read_calib(struct cam *cam)
{
	if (cam->calib)
		return 0;
	cam->calib = kzalloc(64, GFP_KERNEL);
	if (!cam->calib)
		return -ENOMEM;
	writel(1, cam->base + 8);
	/* expect: msleep-under-20ms */
	msleep(5);
	memcpy_fromio(cam->calib, cam->base + 0x100, 64);
	return 0;
}

static void cam_tune(struct cam *cam)
{
	if (!cam->tuned) {
		writel(2, cam->base + 8);
		/* expect: msleep-under-20ms */
		msleep(4);
		cam->tuned = true;
	}
}

static int cam_suspend(struct device *dev)
{
	return cam_power_off(dev_get_drvdata(dev));
}

static int cam_resume(struct device *dev)
{
	struct cam *cam = dev_get_drvdata(dev);
	int ret;

	ret = cam_power_on(cam);
	if (ret)
		return ret;
	cam_tune(cam);
	return cam_read_calib(cam);
}

static DEFINE_RUNTIME_DEV_PM_OPS(cam_pm_ops, cam_suspend, cam_resume, NULL);

static struct platform_driver cam_driver = {
	.driver = {
		.name = "cam",
		.pm = pm_ptr(&cam_pm_ops),
	},
};
module_platform_driver(cam_driver);
