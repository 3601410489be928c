// SPDX-License-Identifier: GPL-2.0
/* delay-beyond-spec: a comment next to the delay that cites the hardware's documentation (a
 * datasheet, a spec, a manual) and states a time gives the wait a known requirement: no "no
 * known spec minimum" hint (issue 31: yamaha-yas530's runtime resume, whose comment sums the
 * datasheet's 30 ms power-up and 1 ms settle into its 31 ms wait). A citation without a time,
 * or a time without a citation, still leaves the wait's minimum unknown. */
#include <linux/delay.h>
#include <linux/i2c.h>
#include <linux/pm_runtime.h>
#include <linux/regulator/consumer.h>

struct magn {
	struct i2c_client *client;
	struct regulator_bulk_data regs[2];
};

static int magn_runtime_resume(struct device *dev)
{
	struct magn *m = dev_get_drvdata(dev);
	int ret;

	ret = regulator_bulk_enable(ARRAY_SIZE(m->regs), m->regs);
	if (ret)
		return ret;
	/*
	 * The datasheet says the supply ramp is up to 30 ms, after that 1 ms
	 * for the oscillator. Put this at 31ms.
	 */
	/* ok: delay-beyond-spec */
	usleep_range(31000, 40000);
	i2c_smbus_write_byte_data(m->client, 0x01, 1);
	/* see the datasheet for the calibration sequence */
	/* expect: delay-beyond-spec(quiet) */
	msleep(25);
	i2c_smbus_write_byte_data(m->client, 0x02, 1);
	/* the mux is slow, about 30 ms */
	/* expect: delay-beyond-spec(quiet) */
	msleep(40);
	return i2c_smbus_write_byte_data(m->client, 0x03, 1);
}

static int magn_runtime_suspend(struct device *dev)
{
	struct magn *m = dev_get_drvdata(dev);

	return regulator_bulk_disable(ARRAY_SIZE(m->regs), m->regs);
}

static DEFINE_RUNTIME_DEV_PM_OPS(magn_pm_ops, magn_runtime_suspend, magn_runtime_resume, NULL);

static struct i2c_driver magn_driver = {
	.driver = {
		.name = "magn",
		.pm = pm_ptr(&magn_pm_ops),
	},
};
module_i2c_driver(magn_driver);
