// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.1 (6.1.192) drivers/nfc/trf7970a.c: autosuspend is
 * never turned off. Runtime PM is disabled in trf7970a_shutdown(), which system suspend calls
 * too and remove calls under trf->lock, the lock the runtime suspend callback takes: the fix
 * goes right after that helper's call, not inside it, where with runtime PM disabled
 * pm_runtime_dont_use_autosuspend() runs no callback (blind round 2: the old "before
 * pm_runtime_disable()" could deadlock).
 */
#include <linux/module.h>
#include <linux/pm_runtime.h>
#include <linux/spi/spi.h>

static int trf7970a_startup(struct trf7970a *trf)
{
	int ret;

	ret = trf7970a_power_up(trf);
	if (ret)
		return ret;

	pm_runtime_set_active(trf->dev);
	pm_runtime_enable(trf->dev);
	pm_runtime_mark_last_busy(trf->dev);

	return 0;
}

static void trf7970a_shutdown(struct trf7970a *trf)
{
	trf7970a_switch_rf_off(trf);

	pm_runtime_disable(trf->dev);
	pm_runtime_set_suspended(trf->dev);

	trf7970a_power_down(trf);
}

static int trf7970a_probe(struct spi_device *spi)
{
	struct trf7970a *trf;
	int autosuspend_delay, ret;

	trf = devm_kzalloc(&spi->dev, sizeof(*trf), GFP_KERNEL);
	if (!trf)
		return -ENOMEM;
	trf->dev = &spi->dev;
	mutex_init(&trf->lock);

	trf->ddev = nfc_digital_allocate_device(&trf7970a_nfc_ops, 0, 0, 0, 0);
	if (!trf->ddev) {
		ret = -ENOMEM;
		goto err_destroy_lock;
	}
	spi_set_drvdata(spi, trf);

	autosuspend_delay = trf7970a_get_autosuspend_delay(spi->dev.of_node);

	pm_runtime_set_autosuspend_delay(trf->dev, autosuspend_delay);
	/* expect: runtime-pm-autosuspend-not-undone(warning) */
	pm_runtime_use_autosuspend(trf->dev);

	ret = trf7970a_startup(trf);
	if (ret)
		goto err_free_ddev;

	ret = nfc_digital_register_device(trf->ddev);
	if (ret) {
		dev_err(trf->dev, "Can't register NFC digital device: %d\n",
			ret);
		goto err_shutdown;
	}

	return 0;

err_shutdown:
	trf7970a_shutdown(trf);
err_free_ddev:
	nfc_digital_free_device(trf->ddev);
err_destroy_lock:
	mutex_destroy(&trf->lock);
	return ret;
}

static void trf7970a_remove(struct spi_device *spi)
{
	struct trf7970a *trf = spi_get_drvdata(spi);

	mutex_lock(&trf->lock);

	trf7970a_shutdown(trf);

	mutex_unlock(&trf->lock);

	nfc_digital_unregister_device(trf->ddev);
	nfc_digital_free_device(trf->ddev);
}

static int trf7970a_suspend(struct device *dev)
{
	struct spi_device *spi = to_spi_device(dev);
	struct trf7970a *trf = spi_get_drvdata(spi);

	mutex_lock(&trf->lock);

	trf7970a_shutdown(trf);

	mutex_unlock(&trf->lock);

	return 0;
}

static int trf7970a_pm_runtime_suspend(struct device *dev)
{
	struct spi_device *spi = to_spi_device(dev);
	struct trf7970a *trf = spi_get_drvdata(spi);
	int ret;

	mutex_lock(&trf->lock);
	ret = trf7970a_power_down(trf);
	mutex_unlock(&trf->lock);

	return ret;
}

static struct spi_driver trf7970a_spi_driver = {
	.probe		= trf7970a_probe,
	.remove		= trf7970a_remove,
	.driver	= {
		.name		= "trf7970a",
	},
};
module_spi_driver(trf7970a_spi_driver);
