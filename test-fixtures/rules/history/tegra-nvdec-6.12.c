// SPDX-License-Identifier: GPL-2.0
/*
 * Trimmed from Debian's linux-source-6.12 (6.12.117) drivers/gpu/drm/tegra/nvdec.c: remove
 * disables runtime PM and unregisters the host1x client; host1x_client_unregister() ->
 * host1x_device_exit() (drivers/gpu/host1x/bus.c:262-263) runs the client's .exit =
 * nvdec_exit(), which turns autosuspend off. Blind round 2 called the warning wrong; the
 * undo is a framework teardown callback (lifetime-pairs.yaml teardown_callbacks).
 */
#include <linux/host1x.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

static int nvdec_exit(struct host1x_client *client)
{
	struct tegra_drm_client *drm = host1x_to_drm_client(client);
	struct drm_device *dev = dev_get_drvdata(client->host);
	struct tegra_drm *tegra = dev->dev_private;
	int err;

	err = tegra_drm_unregister_client(tegra, drm);
	if (err < 0)
		return err;

	pm_runtime_dont_use_autosuspend(client->dev);
	pm_runtime_force_suspend(client->dev);
	return 0;
}

static const struct host1x_client_ops nvdec_client_ops = {
	.init = nvdec_init,
	.exit = nvdec_exit,
};

static int nvdec_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct nvdec *nvdec;
	int err;

	nvdec = devm_kzalloc(dev, sizeof(*nvdec), GFP_KERNEL);
	if (!nvdec)
		return -ENOMEM;

	nvdec->client.base.ops = &nvdec_client_ops;
	nvdec->client.base.dev = dev;

	err = host1x_client_register(&nvdec->client.base);
	if (err < 0) {
		dev_err(dev, "failed to register host1x client: %d\n", err);
		goto exit_falcon;
	}

	pm_runtime_enable(dev);
	/* ok: runtime-pm-autosuspend-not-undone */
	pm_runtime_use_autosuspend(dev);
	pm_runtime_set_autosuspend_delay(dev, 500);

	return 0;

exit_falcon:
	falcon_exit(&nvdec->falcon);

	return err;
}

static void nvdec_remove(struct platform_device *pdev)
{
	struct nvdec *nvdec = platform_get_drvdata(pdev);

	pm_runtime_disable(&pdev->dev);
	host1x_client_unregister(&nvdec->client.base);
	falcon_exit(&nvdec->falcon);
}

struct platform_driver tegra_nvdec_driver = {
	.driver = {
		.name = "tegra-nvdec",
	},
	.probe = nvdec_probe,
	.remove_new = nvdec_remove,
};
