// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.spi.Origin;
import dev.granary.testkit.OriginContractTest;

/** Runs every test of the origin contract against {@link MapOrigin}. */
class MapOriginContractTest extends OriginContractTest {

    @Override
    protected Fixture createFixture() {
        MapOrigin origin = new MapOrigin("contract");
        return new Fixture() {
            @Override
            public void put(String key, byte[] bytes) {
                origin.put(key, bytes);
            }

            @Override
            public void delete(String key) {
                origin.delete(key);
            }

            @Override
            public Origin origin() {
                return origin;
            }
        };
    }
}
