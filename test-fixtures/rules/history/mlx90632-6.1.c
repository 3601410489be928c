// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/iio/temperature/mlx90632.c:
 * probe disables runtime PM, sets it active and enables it again (:965-971): the enable
 * gives back the disable depth the disable took (an I2C client starts disabled), so runtime
 * PM is never on and a failed iio_device_register() leaves nothing behind (blind round 3:
 * "wrong"). remove disables without turning autosuspend off: that stays reported.
 */
#include <linux/i2c.h>
#include <linux/iio/iio.h>
#include <linux/pm_runtime.h>

static int mlx90632_probe(struct i2c_client *client)
{
	struct iio_dev *indio_dev;
	struct mlx90632_data *mlx90632;
	int ret;

	indio_dev = devm_iio_device_alloc(&client->dev, sizeof(*mlx90632));
	if (!indio_dev)
		return -ENOMEM;
	mlx90632 = iio_priv(indio_dev);
	i2c_set_clientdata(client, indio_dev);

	pm_runtime_disable(&client->dev);
	ret = pm_runtime_set_active(&client->dev);
	if (ret < 0) {
		mlx90632_sleep(mlx90632);
		return ret;
	}
	/* ok: runtime-pm-enable-not-undone */
	pm_runtime_enable(&client->dev);
	pm_runtime_set_autosuspend_delay(&client->dev, MLX90632_SLEEP_DELAY_MS);
	/* expect: runtime-pm-autosuspend-not-undone(warning) */
	pm_runtime_use_autosuspend(&client->dev);

	return iio_device_register(indio_dev);
}

static void mlx90632_remove(struct i2c_client *client)
{
	struct iio_dev *indio_dev = i2c_get_clientdata(client);
	struct mlx90632_data *data = iio_priv(indio_dev);

	iio_device_unregister(indio_dev);

	pm_runtime_disable(&client->dev);
	pm_runtime_set_suspended(&client->dev);
	pm_runtime_put_noidle(&client->dev);

	mlx90632_sleep(data);
}

static struct i2c_driver mlx90632_driver = {
	.driver = {
		.name	= "mlx90632",
	},
	.probe_new = mlx90632_probe,
	.remove = mlx90632_remove,
};
module_i2c_driver(mlx90632_driver);
