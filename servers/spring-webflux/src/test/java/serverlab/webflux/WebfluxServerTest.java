package serverlab.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.boot.test.context.SpringBootTest.UseMainMethod.ALWAYS;
import static org.springframework.boot.test.context.SpringBootTest.WebEnvironment.RANDOM_PORT;

import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import serverlab.contract.AbstractServerTest;

/**
 * The real server on a random port, driven over HTTP by the shared contract checks. It starts
 * through main(), as in production: the settings come from the environment (WORKDAY_CALENDAR as
 * set by the build) and main() registers the contract bean.
 */
@SpringBootTest(webEnvironment = RANDOM_PORT, useMainMethod = ALWAYS)
class WebfluxServerTest extends AbstractServerTest {

  WebfluxServerTest(@LocalServerPort int port) {
    super(WebfluxServer.DISPLAY_NAME, port);
  }

  /** Also a target that WebFlux alone would refuse, through RequestTargetEscaper. */
  @Override
  @Test
  protected void malformedEscapesReachTheContract() throws IOException {
    super.malformedEscapesReachTheContract();
    assertThat(rawGet("/?n=5&x={%ZZ}")).startsWith("HTTP/1.1 200 ");
  }
}
