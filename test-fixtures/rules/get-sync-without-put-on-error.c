// SPDX-License-Identifier: GPL-2.0
/* get-sync-without-put-on-error: the usage count leaks when pm_runtime_get_sync() fails. */
#include <linux/i2c.h>
#include <linux/pm_runtime.h>

struct sensor {
	struct device *dev;
	struct i2c_client *client;
};

static int sensor_read(struct sensor *s, u8 reg)
{
	int ret;

	/* expect: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(s->dev);
	if (ret < 0)
		return ret;

	ret = i2c_smbus_read_byte_data(s->client, reg);
	pm_runtime_put_autosuspend(s->dev);
	return ret;
}

static int sensor_write(struct sensor *s, u8 reg, u8 val)
{
	int ret;

	/* expect: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(s->dev);
	if (ret < 0) {
		dev_err(s->dev, "failed to resume: %d\n", ret);
		goto out;
	}
	ret = i2c_smbus_write_byte_data(s->client, reg, val);
	pm_runtime_put_autosuspend(s->dev);
out:
	return ret;
}

static int sensor_enable(struct sensor *s)
{
	/* expect: get-sync-without-put-on-error */
	if (pm_runtime_get_sync(s->dev) < 0)
		return -EIO;
	return 0;
}

static int sensor_disable(struct sensor *s)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(s->dev);
	if (ret < 0) {
		pm_runtime_put_noidle(s->dev);
		return ret;
	}
	return 0;
}

static int sensor_reset(struct sensor *s)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(s->dev);
	if (ret < 0)
		goto err_put;
	ret = i2c_smbus_write_byte_data(s->client, 0, 1);
err_put:
	pm_runtime_put(s->dev);
	return ret;
}

static int sensor_probe_tail(struct sensor *s)
{
	/* ok: get-sync-without-put-on-error */
	pm_runtime_get_sync(s->dev);
	i2c_smbus_write_byte_data(s->client, 0, 0);
	pm_runtime_put(s->dev);
	return 0;
}

static int sensor_check(struct sensor *s)
{
	int ret;

	/* expect: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(s->dev);
	if (ret < 0 && ret != -EACCES)
		return ret;
	pm_runtime_put(s->dev);
	return 0;
}
