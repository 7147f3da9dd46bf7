"""Image-classification benchmarks as graphs: the MNIST / CIFAR10 superpixel graphs
(:mod:`.superpixels`), their construction (:mod:`.superpixel_graph`) and the image files
(:mod:`.image_files`)."""
