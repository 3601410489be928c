// SPDX-License-Identifier: GPL-2.0
/* busy-wait-in-pm-callback: a retry loop around an I2C transfer (r9, hdc3020.c:155-160: the
 * sensor does not answer while it measures, so the driver retries i2c_transfer() with
 * mdelay(10) up to 10 times). i2c_transfer() sleeps, so nothing atomic runs the loop, and the
 * busy answer is a normal one: priced at every try (10 x 10 ms), a warning. A poll of a
 * register (no sleeping call) stays a hint; so does a retry loop without a constant bound. */
#include <linux/delay.h>
#include <linux/i2c.h>

#define SENS_RETRIES	10
#define SENS_BUSY_MS	10

struct sens {
	struct i2c_client *client;
	void __iomem *regs;
	int tries;
};

static int sens_write(struct sens *s, u8 *buf, int len)
{
	struct i2c_msg msg = { .addr = s->client->addr, .len = len, .buf = buf };
	int cnt, ret;

	for (cnt = 0; cnt < SENS_RETRIES; cnt++) {
		ret = i2c_transfer(s->client->adapter, &msg, 1);
		if (ret == 1)
			return 0;
		/* expect: busy-wait-in-pm-callback(warning) */
		mdelay(SENS_BUSY_MS);
	}
	return -ETIMEDOUT;
}

static int sens_write_unbounded(struct sens *s, u8 *buf, int len)
{
	struct i2c_msg msg = { .addr = s->client->addr, .len = len, .buf = buf };
	int cnt, ret;

	for (cnt = 0; cnt < s->tries; cnt++) {
		ret = i2c_transfer(s->client->adapter, &msg, 1);
		if (ret == 1)
			return 0;
		/* expect: busy-wait-in-pm-callback(quiet) */
		mdelay(SENS_BUSY_MS);
	}
	return -ETIMEDOUT;
}

static int sens_poll(struct sens *s)
{
	int cnt;

	for (cnt = 0; cnt < SENS_RETRIES; cnt++) {
		if (readl(s->regs) & 1)
			return 0;
		/* expect: busy-wait-in-pm-callback(quiet) */
		mdelay(SENS_BUSY_MS);
	}
	return -ETIMEDOUT;
}

static int sens_suspend(struct device *dev)
{
	struct sens *s = dev_get_drvdata(dev);
	u8 cmd[2] = { 0x30, 0x93 };
	int ret;

	ret = sens_write(s, cmd, 2);
	if (ret)
		return ret;
	ret = sens_write_unbounded(s, cmd, 2);
	if (ret)
		return ret;
	return sens_poll(s);
}

static int sens_resume(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(sens_pm_ops, sens_suspend, sens_resume);

static struct i2c_driver sens_driver = {
	.driver = {
		.name = "sens",
		.pm = pm_sleep_ptr(&sens_pm_ops),
	},
};
module_i2c_driver(sens_driver);
