package serverlab.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import serverlab.contract.AbstractServerTest;
import serverlab.contract.Contract;
import serverlab.contract.ServerSettings;

/** The real server on a random port, driven over HTTP by the shared contract checks. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class WebfluxServerTest extends AbstractServerTest {

  /** The contract bean that main() registers, from WORKDAY_CALENDAR as set by the build. */
  @TestConfiguration(proxyBeanMethods = false)
  static class FromEnvironment {
    @Bean
    Contract contract() throws ServerSettings.InvalidSettingException {
      return ServerSettings.fromEnvironment(WebfluxServer.DISPLAY_NAME).contract();
    }
  }

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
