#!/bin/bash
# Rounds G and H of session 4 in one lease (bench/results/2026-12-02/session4/README.md).
R=$(pwd)
bash .dev/round_g.sh
cd $R && bash .dev/round_h.sh
