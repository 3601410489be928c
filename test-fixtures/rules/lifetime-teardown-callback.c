// SPDX-License-Identifier: GPL-2.0
/*
 * tegra-nvdec-6.12.c's shape where the host1x client's .exit does not turn autosuspend off
 * (a mechanism fixture, not real code): remove's pm_runtime_disable() leaves it on.
 * Teardown callbacks count per file (a file has one driver and one client).
 */
#include <linux/host1x.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>

/* the same shape where the client's .exit does not turn autosuspend off: remove leaks it */
static int vx_exit(struct host1x_client *client)
{
	pm_runtime_force_suspend(client->dev);
	return 0;
}

static const struct host1x_client_ops vx_client_ops = {
	.exit = vx_exit,
};

static int vx_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct vx *vx;
	int err;

	vx = devm_kzalloc(dev, sizeof(*vx), GFP_KERNEL);
	if (!vx)
		return -ENOMEM;
	vx->client.ops = &vx_client_ops;
	err = host1x_client_register(&vx->client);
	if (err < 0)
		return err;

	pm_runtime_enable(dev);
	/* expect: runtime-pm-autosuspend-not-undone(warning) */
	pm_runtime_use_autosuspend(dev);
	return 0;
}

static void vx_remove(struct platform_device *pdev)
{
	struct vx *vx = platform_get_drvdata(pdev);

	pm_runtime_disable(&pdev->dev);
	host1x_client_unregister(&vx->client);
}

struct platform_driver tegra_vx_driver = {
	.driver = {
		.name = "tegra-vx",
	},
	.probe = vx_probe,
	.remove_new = vx_remove,
};
