"""The public API's model and result types; ``bayesrepro`` exports them (``import bayesrepro as br``)."""
