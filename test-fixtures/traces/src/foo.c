// SPDX-License-Identifier: GPL-2.0
#include <linux/i2c.h>
#include <linux/pm.h>

static int foo_suspend(struct device *dev)
{
	return 0;
}

static int foo_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops foo_pm_ops = {
	SET_SYSTEM_SLEEP_PM_OPS(foo_suspend, foo_resume)
};

static int foo_probe(struct i2c_client *client)
{
	return 0;
}

static struct i2c_driver foo_driver = {
	.driver = {
		.name = "foo",
		.pm = &foo_pm_ops,
	},
	.probe = foo_probe,
};
module_i2c_driver(foo_driver);
