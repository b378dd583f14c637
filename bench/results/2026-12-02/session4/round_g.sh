#!/bin/bash
# Round G (session 4): memory-pattern ceiling variants of the default layout (scale-buffer access, L2 prefetch
# hints), then the step itself with an L2::256B prefetch hint on the scale copies (s256) and on every copy (a256)
# against the unchanged kernel (base): three binaries, alternated twice, each interleaving 5 layouts x 11 rounds.
cd .dev/bin
./ceil_ab 2>&1 | tee $OUT/ceil_ab.txt
for r in 1 2; do for v in base s256 a256; do ./ab_$v all 11 2>&1 | grep -v "^copy" | sed "s/^/pass $r $v  /"; done; done | tee $OUT/ab_hint.txt
