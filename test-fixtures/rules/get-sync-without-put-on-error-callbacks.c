// SPDX-License-Identifier: GPL-2.0
/*
 * get-sync-without-put-on-error: callbacks whose framework does or does not release the
 * reference when they fail (rules/tables/callback-release.yaml).
 */
#include <drm/drm_bridge.h>
#include <linux/dmaengine.h>
#include <linux/mailbox_controller.h>
#include <linux/platform_device.h>
#include <linux/pm_runtime.h>
#include <linux/pwm.h>

struct foo {
	struct device *dev;
	struct drm_bridge bridge;
	struct dma_device ddev;
};

/* pwm_ops.request: a failing request is not followed by .free */
static int foo_pwm_request(struct pwm_chip *chip, struct pwm_device *pwm)
{
	/* expect: get-sync-without-put-on-error(warning) */
	return pm_runtime_get_sync(pwmchip_parent(chip));
}

static void foo_pwm_free(struct pwm_chip *chip, struct pwm_device *pwm)
{
	pm_runtime_put(pwmchip_parent(chip));
}

static const struct pwm_ops foo_pwm_ops = {
	.request = foo_pwm_request,
	.free = foo_pwm_free,
};

/* dma_device.device_alloc_chan_resources, installed by assignment */
static int foo_alloc_chan_resources(struct dma_chan *chan)
{
	int ret;

	/* expect: get-sync-without-put-on-error(warning) */
	ret = pm_runtime_get_sync(chan->device->dev);
	return ret;
}

/* mbox_chan_ops.startup: a failing startup is followed by .shutdown, which puts */
static int foo_mbox_startup(struct mbox_chan *chan)
{
	/* ok: get-sync-without-put-on-error */
	return pm_runtime_get_sync(chan->mbox->dev);
}

static void foo_mbox_shutdown(struct mbox_chan *chan)
{
	pm_runtime_put(chan->mbox->dev);
}

static const struct mbox_chan_ops foo_mbox_ops = {
	.startup = foo_mbox_startup,
	.shutdown = foo_mbox_shutdown,
};

/* a helper returning the result: its callers decide, nothing is known here */
static int foo_power_get(struct foo *foo)
{
	/* ok: get-sync-without-put-on-error */
	return pm_runtime_get_sync(foo->dev);
}

/* drm_bridge_funcs.enable is void: .disable runs anyway and does the put */
static void foo_bridge_enable(struct drm_bridge *bridge)
{
	struct foo *foo = container_of(bridge, struct foo, bridge);
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0) {
		dev_err(foo->dev, "failed to resume: %d\n", ret);
		return;
	}
	foo_power_get(foo);
}

static void foo_bridge_disable(struct drm_bridge *bridge)
{
	struct foo *foo = container_of(bridge, struct foo, bridge);

	pm_runtime_put(foo->dev);
}

/* paired, with a put only on a later error path: the success path keeps the reference */
static void foo_bridge_pre_enable(struct drm_bridge *bridge)
{
	struct foo *foo = container_of(bridge, struct foo, bridge);
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0)
		goto err_exit;
	ret = clk_prepare_enable(foo->clk);
	if (ret)
		goto err_put;
	return;

err_put:
	pm_runtime_put(foo->dev);
err_exit:
	dev_err(foo->dev, "pre_enable failed\n");
}

static void foo_bridge_post_disable(struct drm_bridge *bridge)
{
	struct foo *foo = container_of(bridge, struct foo, bridge);

	clk_disable_unprepare(foo->clk);
	pm_runtime_put(foo->dev);
}

/* paired, but the reference is dropped in the same function: the early return skips it */
static void foo_bridge_atomic_enable(struct drm_bridge *bridge, struct drm_bridge_state *old)
{
	struct foo *foo = container_of(bridge, struct foo, bridge);
	int ret;

	/* expect: get-sync-without-put-on-error(warning) */
	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0)
		return;
	writel(1, foo->regs);
	pm_runtime_put(foo->dev);
}

/* an int helper only used by a paired callback: the paired release runs anyway */
static int foo_phy_on(struct foo *foo)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0)
		return ret;
	return clk_prepare_enable(foo->clk);
}

static void foo_bridge_atomic_pre_enable(struct drm_bridge *bridge, struct drm_bridge_state *old)
{
	struct foo *foo = container_of(bridge, struct foo, bridge);

	if (foo_phy_on(foo))
		dev_err(foo->dev, "phy on failed\n");
}

static void foo_bridge_atomic_post_disable(struct drm_bridge *bridge, struct drm_bridge_state *old)
{
	struct foo *foo = container_of(bridge, struct foo, bridge);

	clk_disable_unprepare(foo->clk);
	pm_runtime_put(foo->dev);
}

static const struct drm_bridge_funcs foo_bridge_funcs = {
	.enable = foo_bridge_enable,
	.disable = foo_bridge_disable,
	.pre_enable = foo_bridge_pre_enable,
	.post_disable = foo_bridge_post_disable,
	.atomic_enable = foo_bridge_atomic_enable,
	.atomic_pre_enable = foo_bridge_atomic_pre_enable,
	.atomic_post_disable = foo_bridge_atomic_post_disable,
};

/* a void function of no known pair keeps the reference: whether it is dropped is unknown */
static void foo_submit(struct foo *foo)
{
	int ret;

	/* expect: get-sync-without-put-on-error(info) */
	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0)
		return;
	writel(1, foo->regs);
}

/* an int helper whose callers all ignore its result: they go on and put */
static int foo_wake(struct foo *foo)
{
	int ret;

	/* ok: get-sync-without-put-on-error */
	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0)
		return ret;
	return 0;
}

static void foo_kick(struct foo *foo)
{
	foo_wake(foo);
	foo_submit(foo);
	writel(2, foo->regs);
	pm_runtime_put(foo->dev);
}

/* a driver probe: a failing probe is not followed by .remove */
static int foo_probe(struct platform_device *pdev)
{
	struct foo *foo = devm_kzalloc(&pdev->dev, sizeof(*foo), GFP_KERNEL);

	foo->dev = &pdev->dev;
	foo->ddev.device_alloc_chan_resources = foo_alloc_chan_resources;
	/* expect: runtime-pm-enable-not-undone */
	pm_runtime_enable(&pdev->dev);
	/* expect: get-sync-without-put-on-error(warning) */
	return pm_runtime_get_sync(&pdev->dev);
}

static struct platform_driver foo_driver = {
	.probe = foo_probe,
	.driver = {
		.name = "foo",
	},
};
