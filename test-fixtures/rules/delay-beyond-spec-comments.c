// SPDX-License-Identifier: GPL-2.0
/* delay-beyond-spec: a comment that states the device's requirement is the spec the wait
 * meets; a stated need plus an admitted extra is reported with the extra; a wait behind
 * state cached on first use is no cost of the cycle (issue 20). */
#include <linux/delay.h>
#include <linux/i2c.h>

struct snsr {
	struct i2c_client *client;
	u8 *otp;
};

static int snsr_read_otp(struct snsr *s)
{
	if (s->otp)
		return 0;
	s->otp = kzalloc(32, GFP_KERNEL);
	if (!s->otp)
		return -ENOMEM;
	i2c_smbus_write_byte_data(s->client, 0x10, 1);
	/* ok: delay-beyond-spec */
	msleep(60);
	return i2c_smbus_read_i2c_block_data(s->client, 0x20, 32, s->otp);
}

static int snsr_resume(struct device *dev)
{
	struct snsr *s = dev_get_drvdata(dev);

	i2c_smbus_write_byte_data(s->client, 0x01, 1);
	/*
	 * The calibration bank cannot be read for 30 ms after the sensor leaves standby.
	 */
	/* ok: delay-beyond-spec */
	msleep(30);
	i2c_smbus_write_byte_data(s->client, 0x02, 1);
	/* the bridge takes 40 ms to lock; 5 ms extra for margin */
	/* expect: delay-beyond-spec */
	msleep(45);
	return snsr_read_otp(s);
}

static int snsr_suspend(struct device *dev)
{
	struct snsr *s = dev_get_drvdata(dev);

	return i2c_smbus_write_byte_data(s->client, 0x01, 0);
}

static DEFINE_SIMPLE_DEV_PM_OPS(snsr_pm_ops, snsr_suspend, snsr_resume);

static struct i2c_driver snsr_driver = {
	.driver = {
		.name = "snsr",
		.pm = pm_sleep_ptr(&snsr_pm_ops),
	},
};
module_i2c_driver(snsr_driver);
