"""The generalization set: the public zoo's image families exported at other input sizes, which
no tuning used, to check that a speed-up is not shaped by the sizes it was measured on.

    /usr/bin/python3 ../shared/peers/export_models.py DIR --zoo generalization \
        --models-file bench/generalization_models.py

adds <family>_160 and <family>_320 for every image model of the public zoo (and resnet50 and
densenet121); the text, speech and ViT models have fixed sizes and stay out.
"""
import peer_models

SIZES = (160, 320)
FAMILIES = [
    "mnasnet1_0", "mobilenet_v3_large", "regnet_y_400mf", "resnext50_32x4d", "inception_v3",
    "convnext_tiny", "swin_t", "efficientnet_b3", "deeplabv3_mobilenet_v3_large",
    "lraspp_mobilenet_v3_large", "unet_small", "resnet50", "densenet121",
]

for family in FAMILIES:
    for size in SIZES:
        cfg = dict(peer_models.MODELS[family])
        cfg["input_shape"] = (1, 3, size, size)
        cfg["zoo"] = "generalization"
        peer_models.MODELS[f"{family}_{size}"] = cfg
