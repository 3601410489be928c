// SPDX-License-Identifier: GPL-2.0
/* runtime-pm-while-disabled: an autosuspending codec whose .suspend does not touch runtime
 * PM at all. When the system suspends after the autosuspend delay, the device is
 * RPM_SUSPENDED, and the get in suspend_noirq returns -EACCES: the suspend aborts. */
#include <linux/i2c.h>
#include <linux/pm_runtime.h>

struct codec {
	struct device *dev;
	struct regmap *map;
	bool jack_irq;
};

static int codec_suspend(struct device *dev)
{
	struct codec *c = dev_get_drvdata(dev);

	c->jack_irq = false;
	return 0;
}

static int codec_resume(struct device *dev)
{
	struct codec *c = dev_get_drvdata(dev);

	c->jack_irq = true;
	return 0;
}

static int codec_suspend_noirq(struct device *dev)
{
	struct codec *c = dev_get_drvdata(dev);
	int err;

	/* expect: runtime-pm-while-disabled(warning) */
	err = pm_runtime_get_sync(c->dev);
	if (err < 0) {
		pm_runtime_put_noidle(c->dev);
		return err;
	}
	regmap_write(c->map, 0x10, 0);
	pm_runtime_put_noidle(c->dev);
	return 0;
}

static int codec_resume_noirq(struct device *dev)
{
	struct codec *c = dev_get_drvdata(dev);

	return regmap_write(c->map, 0x10, 1);
}

static int codec_runtime_suspend(struct device *dev)
{
	return 0;
}

static int codec_runtime_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops codec_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(codec_suspend, codec_resume)
	NOIRQ_SYSTEM_SLEEP_PM_OPS(codec_suspend_noirq, codec_resume_noirq)
	RUNTIME_PM_OPS(codec_runtime_suspend, codec_runtime_resume, NULL)
};

static int codec_probe(struct i2c_client *client)
{
	pm_runtime_set_autosuspend_delay(&client->dev, 1000);
	pm_runtime_use_autosuspend(&client->dev);
	/* expect: runtime-pm-enable-not-undone */
	pm_runtime_enable(&client->dev);
	return 0;
}

static struct i2c_driver codec_driver = {
	.probe = codec_probe,
	.driver = {
		.name = "codec",
		.pm = pm_ptr(&codec_pm_ops),
	},
};
module_i2c_driver(codec_driver);
